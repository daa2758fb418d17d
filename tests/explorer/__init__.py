"""A fault explorer over the code users run: ``pycurator``'s and ``pycurator.aio``'s public
recipes, their shells, cores, runners, loss notices and listeners, on unchanged kazoo clients.

What is simulated is below the library: the units of concurrency and the clock (:mod:`.sim`: a
hub of greenlets on simulated time; :mod:`.handler`, a kazoo handler on it, and :mod:`.aioloop`,
an asyncio loop; the library reads the hub's time through its one clock), each client's
connection (:mod:`.connection`: kazoo's connection thread, its network and its faults) to an
in-memory ZooKeeper (:mod:`.server`, answering as bytes through :mod:`.jute`). Above it: the
participants (:mod:`.participants`), each running a program of what a user does, written once
for both front ends (:mod:`.programs`), on the recipes of each protocol (:mod:`.protocols`);
what they are told and the invariants on it (:mod:`.world`); the schedules, each named by a line
that replays it (:mod:`.explore`); and defects planted in a copy of the package
(:mod:`.planted`). The same
server also serves real kazoo clients, in real time, on a loopback port (:mod:`.wire`): the
parity scenarios run there too.

``python -m tests.explorer --seconds N`` explores longer than the test suite does; ``--replay
LINE`` runs one schedule again, printing its turns; ``--planted`` plants each defect and runs
the suite's schedules on it. See docs/reliability.md, "The fault explorer".
"""
