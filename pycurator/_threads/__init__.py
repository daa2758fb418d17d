"""The threaded front end of Curator's recipes: shells over :mod:`pycurator._cores` that block
the calling thread (or greenlet) through the client's handler."""
