"""A fault explorer over the protocols' steps (:mod:`pycurator._protocol.steps`).

An in-memory ZooKeeper and the kazoo clients on it (:mod:`.model`: nodes, sessions that live
through a dropped connection, one-shot watches, answers and events in order), a deterministic
scheduler on simulated time that interleaves the steps of several participants on several clients
(:mod:`.scheduler`), the protocols driven as their front ends drive them (:mod:`.protocols`), the
invariants (:mod:`.world`), and the schedules: each single fault at every step boundary, and random
schedules of several faults, each named by a line that replays it (:mod:`.explore`). The same
server also serves real kazoo clients, in real time, over ZooKeeper's wire protocol on a loopback
port (:mod:`.wire`): the parity scenarios run there too.

``python -m tests.explorer --seconds N [--seed S]`` runs it for longer than the test suite does;
``--replay LINE`` runs one schedule again, printing its steps.
"""
