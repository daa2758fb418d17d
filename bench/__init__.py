"""Benchmarks: pycurator side by side with Java Curator, kazoo's Lock and the raw request floor."""
