"""A fault explorer over the protocols' steps (:mod:`pycurator._protocol.steps`).

An in-memory ZooKeeper (:mod:`.model`: nodes, sessions that live through a dropped connection,
one-shot watches, answers in order), a deterministic scheduler on simulated time that interleaves
the steps of several participants on several clients (:mod:`.scheduler`), the protocols driven
as their front ends drive them (:mod:`.protocols`), one fault applied at a chosen step boundary
(:mod:`.faults`), and the invariants checked after every schedule (:mod:`.explore`).

``python -m tests.explorer --seconds N [--seed S]`` runs it for longer than the test suite does.
"""
