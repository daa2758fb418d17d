"""The protocol without I/O: Curator's rules (and the other Java systems') as functions over
names, the requests a protocol sends as data, and the steps it yields. Nothing here sends a
request or waits on a thread; :mod:`pycurator._client` does."""
