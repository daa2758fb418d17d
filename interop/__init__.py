"""Cross-language tests: Java Curator (through JPype) and pycurator on one real ZooKeeper."""
