"""pycurator's side of a kazoo client: the transport that performs the protocol's steps, the two
runners that drive them, the requests kazoo cannot send itself, and the one runtime per client
(timers, owed deletes, listeners, stop, fork). kazoo's private attributes are touched here only,
in :mod:`pycurator._client.kazoo_internals`."""
