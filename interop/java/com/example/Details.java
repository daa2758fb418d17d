package com.example;

import java.util.List;

/** A payload class of a service's own, a field named as Java names it (sslPort). */
public class Details {
    private String region;
    private Integer sslPort;
    private List<String> tags;

    public Details() {}

    public String getRegion() { return region; }
    public void setRegion(String region) { this.region = region; }
    public Integer getSslPort() { return sslPort; }
    public void setSslPort(Integer sslPort) { this.sslPort = sslPort; }
    public List<String> getTags() { return tags; }
    public void setTags(List<String> tags) { this.tags = tags; }
}
