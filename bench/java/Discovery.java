/*
 * The Java side of the benchmark's "discovery" section: Curator's service discovery
 * (curator-x-discovery) in a Java program of its own (no Python, no JPype), as a Java service
 * runs it.
 *
 * Usage: java -cp BUILD:CURATOR_CLASSPATH Discovery HOSTS BASE QUERIES REGISTRATIONS UPDATES
 *        SESSION_MS
 * It connects, and measures on one thread, in turn:
 *   - queries: queryForInstances("big") of the service the harness registered under BASE (its
 *     instances, STATIC), QUERIES times after a few unmeasured: each one's milliseconds;
 *   - registrations: REGISTRATIONS DYNAMIC instances of service "reg-java" registered one
 *     after another, then unregistered: the rate of each (the instances built beforehand);
 *   - the cache: a ServiceCache of service "cached" started, one DYNAMIC instance registered
 *     by a second client's discovery and updated UPDATES times: the milliseconds from each
 *     updateService's start until the cache's listener is told and holds the new port;
 *   - round trips: REGISTRATIONS ephemeral nodes of 300 bytes made, then deleted, one after
 *     another, by Curator's client and by ZooKeeper's own beneath it: each one's mean
 *     microseconds, what a registration and an unregistration cost beyond their one request.
 * It prints its figures as one JSON line, as bench/discovery.py's Python worker does.
 */

import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class Discovery {
    /** Queries made before the measured ones (the JIT compiles Curator and Jackson meanwhile). */
    private static final int WARMUP_QUERIES = 20;
    /** Registrations made and undone before the measured ones. */
    private static final int WARMUP_REGISTRATIONS = 200;
    /** The cached service's instance's first port; each update adds one. */
    private static final int FIRST_PORT = 9000;

    private Discovery() {}

    private static CuratorFramework connect(String hosts, int sessionMs) throws InterruptedException {
        // as bench/java/Contender.java makes its clients
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .ensembleTracker(false)
                .build();
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("not connected to " + hosts);
        }
        return client;
    }

    private static ServiceDiscovery<Object> discovery(CuratorFramework client, String base) throws Exception {
        ServiceDiscovery<Object> found =
                ServiceDiscoveryBuilder.builder(Object.class).client(client).basePath(base).build();
        found.start();
        return found;
    }

    private static ServiceInstance<Object> instance(String name, String id, int port) throws Exception {
        return ServiceInstance.builder()
                .name(name)
                .id(id)
                .address("10.0.0.5")
                .port(port)
                .serviceType(ServiceType.DYNAMIC)
                .build();
    }

    private static List<Double> queries(ServiceDiscovery<Object> discovery, int count) throws Exception {
        int size = -1;
        for (int i = 0; i < WARMUP_QUERIES; i++) {
            size = discovery.queryForInstances("big").size();
        }
        List<Double> millis = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            long start = System.nanoTime();
            int found = discovery.queryForInstances("big").size();
            millis.add((System.nanoTime() - start) / 1e6);
            if (found != size) {
                throw new IllegalStateException("the queried service changed size: " + found);
            }
        }
        return millis;
    }

    /** Registers and unregisters count instances of name: each pass's seconds. */
    private static double[] registrations(ServiceDiscovery<Object> discovery, String name, int count)
            throws Exception {
        List<ServiceInstance<Object>> made = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            made.add(instance(name, "i" + i, 8000 + (i % 1000)));
        }
        long start = System.nanoTime();
        for (ServiceInstance<Object> one : made) {
            discovery.registerService(one);
        }
        long registered = System.nanoTime();
        for (ServiceInstance<Object> one : made) {
            discovery.unregisterService(one);
        }
        long unregistered = System.nanoTime();
        return new double[] {(registered - start) / 1e9, (unregistered - registered) / 1e9};
    }

    /** Nodes of 300 bytes made then deleted, count times, by Curator's client then by
     *  ZooKeeper's: the mean microseconds of a create and of a delete, for each. */
    private static double[] roundTrips(CuratorFramework client, String base, int count) throws Exception {
        byte[] data = new byte[300];
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        double[] micros = new double[4];
        for (int pass = 0; pass < 2; pass++) {  // the first unmeasured
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                client.create().withMode(CreateMode.EPHEMERAL).forPath(base + "/rt" + i, data);
            }
            long created = System.nanoTime();
            for (int i = 0; i < count; i++) {
                client.delete().forPath(base + "/rt" + i);
            }
            long deleted = System.nanoTime();
            for (int i = 0; i < count; i++) {
                zk.create(base + "/rt" + i, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
            }
            long zkCreated = System.nanoTime();
            for (int i = 0; i < count; i++) {
                zk.delete(base + "/rt" + i, -1);
            }
            long zkDeleted = System.nanoTime();
            micros = new double[] {(created - start) / 1e3 / count, (deleted - created) / 1e3 / count,
                (zkCreated - deleted) / 1e3 / count, (zkDeleted - zkCreated) / 1e3 / count};
        }
        return micros;
    }

    private static List<Double> cacheUpdates(CuratorFramework client, String hosts, String base, int count,
            int sessionMs) throws Exception {
        CuratorFramework writerClient = connect(hosts, sessionMs);
        try (ServiceDiscovery<Object> writer = discovery(writerClient, base);
                ServiceDiscovery<Object> reader = discovery(client, base)) {
            writer.registerService(instance("cached", "c", FIRST_PORT));
            ServiceCache<Object> cache = reader.serviceCacheBuilder().name("cached").build();
            LinkedBlockingQueue<Integer> told = new LinkedBlockingQueue<>();
            cache.addListener(new ServiceCacheListener() {
                @Override
                public void cacheChanged() {
                    for (ServiceInstance<Object> one : cache.getInstances()) {
                        told.offer(one.getPort());
                    }
                }

                @Override
                public void stateChanged(CuratorFramework ignored, ConnectionState state) {}
            });
            cache.start();
            List<Double> millis = new ArrayList<>();
            for (int i = 1; i <= count + WARMUP_QUERIES; i++) {
                int port = FIRST_PORT + i;
                long start = System.nanoTime();
                writer.updateService(instance("cached", "c", port));
                while (true) {
                    Integer seen = told.poll(60, TimeUnit.SECONDS);
                    if (seen == null) {
                        throw new IllegalStateException("the cache was not told of an update");
                    }
                    if (seen == port) {
                        break;
                    }
                }
                if (i > WARMUP_QUERIES) {
                    millis.add((System.nanoTime() - start) / 1e6);
                }
            }
            cache.close();
            return millis;
        } finally {
            writerClient.close();
        }
    }

    private static String curatorVersion() {
        try (InputStream in = CuratorFramework.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-framework/pom.properties")) {
            if (in != null) {
                Properties props = new Properties();
                props.load(in);
                return props.getProperty("version", "unknown");
            }
        } catch (Exception ignored) {
            // the version is for the report only
        }
        String version = CuratorFramework.class.getPackage().getImplementationVersion();
        return version != null ? version : "unknown";
    }

    private static String list(List<Double> values) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            out.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.4f", values.get(i)));
        }
        return out.append("]").toString();
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        String base = args[1];
        int queryCount = Integer.parseInt(args[2]);
        int registrationCount = Integer.parseInt(args[3]);
        int updateCount = Integer.parseInt(args[4]);
        int sessionMs = Integer.parseInt(args[5]);
        CuratorFramework client = connect(hosts, sessionMs);
        List<Double> queried;
        double[] seconds;
        List<Double> updated;
        double[] trips;
        try (ServiceDiscovery<Object> discovery = discovery(client, base)) {
            queried = queries(discovery, queryCount);
            registrations(discovery, "warm-java", WARMUP_REGISTRATIONS);
            seconds = registrations(discovery, "reg-java", registrationCount);
            updated = updateCount > 0 ? cacheUpdates(client, hosts, base, updateCount, sessionMs)
                    : new ArrayList<>();
            trips = roundTrips(client, base, registrationCount);
        } finally {
            client.close();
        }
        System.out.println(String.format(Locale.ROOT,
                "{\"side\": \"curator-java\", \"query_ms\": %s, \"register_per_s\": %.1f,"
                        + " \"unregister_per_s\": %.1f, \"cache_update_ms\": %s, \"curator\": \"%s\","
                        + " \"java\": \"%s\", \"client_create_us\": %.1f, \"client_delete_us\": %.1f,"
                        + " \"floor_create_us\": %.1f, \"floor_delete_us\": %.1f}",
                list(queried), registrationCount / seconds[0], registrationCount / seconds[1],
                list(updated), curatorVersion(), System.getProperty("java.version"),
                trips[0], trips[1], trips[2], trips[3]));
    }
}
