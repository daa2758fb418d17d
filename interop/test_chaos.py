"""A short run of the chaos checker: mixed Java and Python contenders on a mutex, a read/write
lock and a semaphore, leaders of a latch and a selector election, and holders of ZooKeeper's
WriteLock and menagerie's lock, under random faults on a 3-node ensemble
(``pycurator.testing.chaos``)."""

from __future__ import annotations

import copy
import dataclasses
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest

from pycurator.testing import ClientFactory, ephemerals_by_session, eventually, start_jvm
from pycurator.testing.chaos import (
    CONTENDERS,
    EXCLUSIVE,
    FAULTS,
    Chaos,
    Contender,
    Gate,
    Hold,
    JavaContender,
    LiveOrphan,
    LogEntry,
    Orphans,
    PythonContender,
    Quiet,
    QuietCheck,
    Report,
    check,
)
from pycurator.testing.chaos import Faults as FaultLog
from pycurator.testing.chaos.history import MUTEX, ROOT, RW, SELECTOR, SEMAPHORE, Outcome
from pycurator.testing.chaos.quiet import Client, classify
from pycurator.testing.chaos.run import prepare
from pycurator.testing.pytest_plugin import ZooKeeperTarget

PROGRAMMING_ERRORS = {"AttributeError", "TypeError", "NameError", "KeyError", "ValueError"}


def test_a_short_chaos_run_keeps_every_guarantee() -> None:
    report = Chaos(seconds=12, seed=11).run()
    summary = report.summary()
    assert report.ok, summary
    locks = (
        "mutex",
        "rw-read",
        "rw-write",
        "semaphore",
        "latch",
        "selector",
        "zkwrite",
        "menagerie",
    )
    for lock in locks:
        for language in ("python", "java"):
            assert report.holds[f"{lock} {language}"] > 0, summary
    for kind in (*FAULTS, "pause"):
        assert report.faults.counts[kind] > 0, summary
    assert not set(report.errors) & PROGRAMMING_ERRORS, summary
    # a worker of each language was stopped while holding until its session expired: others
    # held meanwhile, and its guarded write was rejected
    assert sorted(p.worker[:2] for p in report.pauses) == ["ja", "py"], summary
    for pause in report.pauses:
        assert pause.successors > 0 and pause.outcome == "rejected", summary
    assert report.overlaps == report.overlaps_with_stale, summary
    # quiet moments: after the first round of faults and before the end, every lock node was
    # an election participant's (the run fails on a live orphan: the test below)
    assert [q.when for q in report.quiet][-1] == "before the end", summary
    assert len(report.quiet) >= 2, summary


def _hold(
    hold_id: str, enter: int, fence: int, *, outcome: Outcome = "fenced", lock: str = "mutex"
) -> Hold:
    hold = Hold(hold_id, "t", "python", lock, True, "/n", 0, enter, fence, fence + 1)
    hold.outcome = outcome
    hold.fences = [fence]
    return hold


def _report(
    holds: list[Hold],
    values: dict[str, int],
    lock: str = "mutex",
    quiet: Sequence[QuietCheck] = (),
    counter: int | None = None,
) -> Report:
    logs: dict[str, dict[str, LogEntry]] = {name: {} for name in EXCLUSIVE}
    logs[lock] = {hold_id: LogEntry(value, 0) for hold_id, value in values.items()}
    given = copy.deepcopy(holds)
    counters = {name: len(log) for name, log in logs.items()}
    if counter is not None:
        counters[lock] = counter
    report = check(
        holds,
        logs,
        counters,
        Orphans(),
        faults=FaultLog(),
        errors=Counter(),
        pauses=[],
        quiet=quiet,
        seconds=0,
        seed=0,
    )
    assert holds == given  # the checker is pure: what it resolves, it resolves in the report
    return report


def _check(holds: list[Hold], values: dict[str, int], lock: str = "mutex") -> list[str]:
    report = _report(holds, values, lock)
    return report.violations + report.counter_problems


def test_the_checker_flags_overlapping_fenced_holds_and_lost_updates() -> None:
    apart = [_hold("a", 0, 10), _hold("b", 20, 30)]
    assert _check(apart, {"a": 1, "b": 2}) == []
    overlapping = [_hold("a", 0, 10), _hold("b", 5, 30)]
    assert any("overlap" in p for p in _check(overlapping, {"a": 1, "b": 2}))
    lost_update = [_hold("a", 0, 10), _hold("b", 20, 30)]
    assert any("once each" in p for p in _check(lost_update, {"a": 1, "b": 1}))
    stale = [_hold("a", 0, 10, outcome="rejected"), _hold("b", 5, 30)]
    assert _check(stale, {"b": 1}) == []


def test_the_checker_takes_a_writes_outcome_and_time_from_the_log() -> None:
    # a reply lost, then a retry rejected: the log says the first attempt landed, at its time
    retried = _hold("a", 0, 50, outcome="rejected")
    retried.fences = [10, 50]
    later = _hold("b", 20, 30)
    assert _check([retried, later], {"a": 1, "b": 2}) == []
    retried = _report([retried, later], {"a": 1, "b": 2}).resolved[0]
    assert retried.outcome == "fenced" and retried.fence_ns == 10
    claimed = [_hold("a", 0, 10), _hold("b", 20, 30)]  # a claims a write the log does not have
    assert any("log did not" in p for p in _check(claimed, {"b": 1}))


def test_the_checker_flags_two_non_stale_leaders_at_once() -> None:
    for election in ("latch", "selector"):
        one_after_another = [
            _hold("java-1", 0, 10, lock=election),
            _hold("py-1", 20, 30, lock=election),
        ]
        assert _check(one_after_another, {"java-1": 1, "py-1": 2}, election) == []
        two_leaders = [_hold("java-1", 0, 10, lock=election), _hold("py-1", 5, 30, lock=election)]
        problems = _check(two_leaders, {"java-1": 1, "py-1": 2}, election)
        assert problems == [f"{election}: java-1 and py-1 overlap (two non-stale leaders at once)"]
        # a leader whose session had gone (its fence rejected) is stale: its successor may lead
        stale = [
            _hold("java-1", 0, 10, outcome="rejected", lock=election),
            _hold("py-1", 5, 30, lock=election),
        ]
        assert _check(stale, {"py-1": 1}, election) == []


def test_of_two_leaders_at_once_the_later_node_led_falsely_and_a_java_one_is_told_apart() -> None:
    """Of two fenced terms that overlap, the false leader is the one whose node has the higher
    sequence: its rival's, made before it, stayed from its entry to the rival's fence. When the
    false leader is a Java original's (Curator 5.4's latch can lead with a node that is not
    first after two reconnects in a row), it is reported and does not fail the run, as the
    originals' live orphans; its write of its rival's counter value too. When it is pycurator's,
    the run fails and the line names it."""
    for election in ("latch", "selector"):
        for late in ("java", "python"):
            false = _hold("late-1", 0, 10, lock=election)
            rival = _hold("early-1", 5, 30, lock=election)
            false.language, false.node = late, f"/{election}/_c_1-latch-0000000008"
            rival.language = "python" if late == "java" else "java"
            rival.node = f"/{election}/_c_2-latch-0000000007"
            # both fences read the counter at 0 and wrote 1
            report = _report([false, rival], {"late-1": 1, "early-1": 1}, election, counter=1)
            told = "late-1 led from _c_1-latch-0000000008 while _c_2-latch-0000000007"
            if late == "java":
                assert report.ok, report.summary()
                assert report.violations == [] and report.counter_problems == []
                assert len(report.java_double_leaders) == 1
                assert told in report.java_double_leaders[0]
                assert "the Java original's own" in report.java_double_leaders[0]
            else:
                assert not report.ok
                assert len(report.violations) == 1 and told in report.violations[0]
                assert report.counter_problems  # the value written twice is not excused
                assert report.java_double_leaders == []


class Contenders:
    """Contender threads of the chaos run on a test server, outside a run: a gate, a stop."""

    def __init__(self, hosts: str) -> None:
        self.hosts = hosts
        self.gate = Gate()
        self.stop = threading.Event()
        self.holds: list[Hold] = []
        self.all: list[Contender] = []
        self.threads: list[threading.Thread] = []

    def start(self, language: str, kind: str) -> Contender:
        who = f"{language[:2]}-{kind}-0"
        contender = CONTENDERS[language](
            who, kind, self.hosts, self.stop, self.holds.append, gate=self.gate
        )
        thread = threading.Thread(target=contender.run, name=who)
        self.all.append(contender)
        self.threads.append(thread)
        thread.start()
        return contender

    def held(self, who: str) -> bool:
        return any(hold.who == who for hold in self.holds)

    def close(self) -> None:
        self.stop.set()
        self.gate.open()
        for thread in self.threads:
            thread.join(60)


@pytest.fixture
def chaos_hosts(zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory) -> Iterator[str]:
    """The test server under a chroot of its own, with the chaos run's counters and elections;
    removed afterwards."""
    chroot = f"/quiet-{uuid.uuid4().hex[:8]}"
    admin = zk_client_factory()
    admin.ensure_path(chroot)
    hosts = f"{zk_server.hosts}{chroot}"
    client = zk_client_factory(hosts=hosts)
    prepare(client)
    yield hosts
    admin.delete(chroot, recursive=True)


def test_a_quiet_moment_names_each_live_orphan_of_either_language(
    chaos_hosts: str, zk_client_factory: ClientFactory
) -> None:
    start_jvm()
    contenders = Contenders(chaos_hosts)
    try:
        mutex = contenders.start("python", "mutex")
        lease = contenders.start("java", "lease")
        assert isinstance(mutex, PythonContender) and isinstance(lease, JavaContender)
        for language in ("python", "java"):  # election participants own a node while parked
            contenders.start(language, "selector")
        contenders.start("asyncio", "read")  # parks too, between two cycles of its task
        every = [contender.who for contender in contenders.all]
        eventually(lambda: all(contenders.held(who) for who in every), 60, "each has held")
        observer = zk_client_factory(hosts=chaos_hosts)
        quiet = Quiet(
            observer,
            contenders.gate,
            contenders.all,
            session_s=5,
            grace_s=1,
            ephemerals=lambda: _ephemerals(chaos_hosts),
        )

        clean = quiet.check("with no orphan")
        assert clean.reached and clean.live_orphans == [], clean
        assert clean.owned == 2, clean  # a node each selector queues or leads with

        # nodes made behind the recipes' backs, in the sessions of a Python contender's kazoo
        # client and of a Java contender's Curator client: each blocks its lock for as long
        # as that session lives
        (kazoo_session,) = mutex.clients()
        planted = mutex.client.create(
            f"{MUTEX}/_c_{uuid.uuid4()}-lock-", ephemeral=True, sequence=True, makepath=True
        )
        (curator_session,) = lease.clients()
        java_planted = str(
            lease.curator.create()
            .creatingParentContainersIfNeeded()
            .withMode(_ephemeral_sequential())
            .forPath(f"{SEMAPHORE}/leases/_c_{uuid.uuid4()}-lease-")
        )
        # and one where no recipe of the run makes nodes: the servers' dump shows it
        astray = mutex.client.create(
            f"{ROOT}/astray/_c_{uuid.uuid4()}-lock-", ephemeral=True, sequence=True, makepath=True
        )
        found = quiet.check("with three planted")
        assert found.reached, found
        assert found.live_orphans == [
            LiveOrphan(astray, kazoo_session, "no recipe's path", "py-mutex-0", "kazoo client"),
            LiveOrphan(planted, kazoo_session, "InterProcessMutex", "py-mutex-0", "kazoo client"),
            LiveOrphan(
                java_planted,
                curator_session,
                "InterProcessSemaphoreV2 (lease)",
                "ja-lease-0",
                "Curator client",
            ),
        ]
        assert found.owned == 2, found
    finally:
        contenders.close()
    report = _report([], {}, quiet=[clean, found])
    assert not report.ok
    assert (
        f"quiet moment with three planted: live orphan {planted} (InterProcessMutex) in session"
        f" {kazoo_session:#x} of py-mutex-0's kazoo client, which owns no such node"
    ) in report.summary().splitlines()
    assert _report([], {}, quiet=[clean]).ok
    # Curator leaves such nodes itself after a drop: the Java side's are told, not failed
    javas = dataclasses.replace(found, live_orphans=[o for o in found.live_orphans if o.javas])
    java_report = _report([], {}, quiet=[clean, javas])
    assert java_report.ok
    assert any("the Java original's own" in line for line in java_report.summary().splitlines())


def _ephemerals(hosts: str) -> dict[str, list[str]]:
    """The servers' ephemeral nodes under the chaos run's root, by session, as ``hosts``'s
    chroot sees them."""
    server, chroot = hosts.split("/", 1)
    found = ephemerals_by_session(server, under=f"/{chroot}{ROOT}")
    return {s: [path.removeprefix(f"/{chroot}") for path in paths] for s, paths in found.items()}


def _ephemeral_sequential() -> object:
    from pycurator.testing import jclass

    return jclass("org.apache.zookeeper.CreateMode").EPHEMERAL_SEQUENTIAL


def test_a_lock_node_is_owned_a_live_orphan_or_of_a_session_the_run_does_not_know() -> None:
    mutex, lease = f"{MUTEX}/_c_a-lock-0000000001", f"{SEMAPHORE}/leases/_c_b-lease-0000000002"
    selector = f"{SELECTOR}/_c_c-lock-0000000003"
    clients = {0x11: Client("py-mutex-0", "kazoo client"), 0x22: Client("ja-lease-0", "Curator")}
    nodes = {mutex: 0x11, lease: 0x33, selector: 0x22}
    orphans, strangers = classify(nodes, clients, owned={selector})
    assert orphans == [LiveOrphan(mutex, 0x11, "InterProcessMutex", "py-mutex-0", "kazoo client")]
    assert strangers == [LiveOrphan(lease, 0x33, "InterProcessSemaphoreV2 (lease)", "", "")]
    assert str(strangers[0]) == (
        f"live orphan {lease} (InterProcessSemaphoreV2 (lease)) in session 0x33"
        " of no client of the run, which owns no such node"
    )
    assert classify({f"{RW}/_c_d-__READ__0000000004": 0x11}, clients, set())[0][0].recipe == (
        "InterProcessReadWriteLock (read)"
    )
