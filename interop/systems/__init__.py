"""Cross-language tests with the other Java lock systems (ZooKeeper's own recipes, menagerie,
ZkLocker) through their Java peers: they do not depend on the version of Curator, so the pass on
the newest Curator leaves them out."""
