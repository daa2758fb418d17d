"""LeaderSelector on a real server: turns, giving up, requeue, interruption, faults, input."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator import LeaderSelector, Leadership, LockLostError, Participant
from pycurator._client import background
from pycurator._client.runtime import services_of
from pycurator._client.transport import default_node_data
from pycurator._protocol.wire import protected_id
from pycurator.testing import ClientFactory, FaultProxy, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, STEADY_RECONNECT, children, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


@pytest.fixture
def selectors() -> Iterator[list[LeaderSelector]]:
    """Selectors a test makes; those still open are closed afterwards."""
    made: list[LeaderSelector] = []
    yield made
    for selector in made:
        with contextlib.suppress(RuntimeError):  # closed by the test already
            selector.close()


class Leader:
    """A ``lead`` function that leads until told to stop (or its term ends)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stop = threading.Event()
        self.returned = threading.Event()
        self.terms: list[Leadership] = []

    def __call__(self, leadership: Leadership) -> None:
        self.terms.append(leadership)
        self.returned.clear()
        self.started.set()
        while not leadership.lost_event.is_set() and not self.stop.is_set():
            leadership.lost_event.wait(0.05)
        self.started.clear()
        self.returned.set()


def test_selectors_with_auto_requeue_take_turns_one_at_a_time(
    zk_client_factory: ClientFactory, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    guard = threading.Lock()
    current: list[str] = []
    overlaps: list[str] = []
    turns: dict[str, int] = {}
    enough = threading.Event()

    def make_lead(name: str) -> Callable[[Leadership], None]:
        def lead(leadership: Leadership) -> None:
            with guard:
                if current:
                    overlaps.append(name)
                current.append(name)
            leadership.lost_event.wait(0.02)
            with guard:
                current.remove(name)
                turns[name] = turns.get(name, 0) + 1
                if len(turns) == 3 and min(turns.values()) >= 3:
                    enough.set()

        return lead

    for name in ("a", "b", "c"):
        selector = LeaderSelector(
            zk_client_factory(), path, make_lead(name), name, auto_requeue=True
        )
        selectors.append(selector)
        selector.start()
    assert enough.wait(SOON * 2)
    for selector in selectors:
        selector.close()
    assert overlaps == []
    eventually(lambda: children(zk_client_factory(), path) == [], what="every node gone")


def test_auto_requeue_queues_the_next_term_on_the_thread_that_heard_the_last_one_end(
    zk_client_factory: ClientFactory, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    client = zk_client_factory()  # a handler of its own: nothing else uses its pool
    terms = threading.Semaphore(0)
    selector = LeaderSelector(
        client, f"{zk_path}/leader", lambda leadership: terms.release(), auto_requeue=True
    )
    selectors.append(selector)
    selector.start()
    for _ in range(5):
        assert terms.acquire(timeout=SOON)
    # no hand-off to the handler's pool between terms (a worker lingers once it has run)
    assert services_of(client.handler).pool.workers == 0


def test_returning_gives_leadership_up_and_requeue_queues_again(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    lead = Leader()
    selector = LeaderSelector(zk, path, lead, "only")
    selectors.append(selector)
    selector.start()
    assert lead.started.wait(SOON)
    assert selector.has_leadership()
    assert not selector.requeue()  # leading: already queued
    assert selector.participants() == [Participant("only", True)]
    name = selector.our_path.rsplit("/", 1)[-1]  # type: ignore[union-attr]
    assert protected_id(name) is not None and name[40:45] == "lock-"
    assert zk.get(selector.our_path)[0] == b"only"
    first = lead.terms[0]
    first.check()
    lead.stop.set()
    assert lead.returned.wait(SOON)
    eventually(lambda: children(zk, path) == [], what="node deleted after lead returned")
    assert first.lost_event.is_set() and not first.is_held()
    with pytest.raises(LockLostError):
        first.check()
    assert not selector.has_leadership()
    lead.stop.clear()
    assert selector.requeue()
    assert lead.started.wait(SOON)
    assert lead.terms[1].fencing_token > first.fencing_token


def test_an_empty_id_writes_curators_default_node_data(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    lead = Leader()
    selector = LeaderSelector(zk, f"{zk_path}/leader", lead)
    selectors.append(selector)
    selector.start()
    assert lead.started.wait(SOON)
    assert zk.get(selector.our_path)[0] == default_node_data()
    assert selector.leader() == Participant(default_node_data().decode(), True)


def test_interrupting_leadership_ends_the_term_and_the_next_leads(
    zk_client_factory: ClientFactory, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    first_lead, second_lead = Leader(), Leader()
    first = LeaderSelector(zk_client_factory(), path, first_lead, "first")
    second = LeaderSelector(zk_client_factory(), path, second_lead, "second")
    selectors += [first, second]
    first.start()
    assert first_lead.started.wait(SOON)
    second.start()
    eventually(lambda: len(first.participants()) == 2, what="second queued")
    assert second.participants() == [Participant("first", True), Participant("second", False)]
    first.interrupt_leadership()
    assert first_lead.returned.wait(SOON)
    assert first_lead.terms[0].reason == "leadership interrupted"
    assert second_lead.started.wait(SOON)
    assert second.leader() == Participant("second", True)


def test_a_leaders_session_expiry_ends_its_term_and_auto_requeue_brings_it_back(
    zk_client_factory: ClientFactory, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    leader_client = zk_client_factory()
    first_lead, second_lead = Leader(), Leader()
    first = LeaderSelector(leader_client, path, first_lead, "first", auto_requeue=True)
    second = LeaderSelector(zk_client_factory(), path, second_lead, "second")
    selectors += [first, second]
    first.start()
    assert first_lead.started.wait(SOON)
    term = first_lead.terms[0]
    second.start()
    eventually(lambda: len(first.participants()) == 2, what="second queued")
    expire_kazoo_session(leader_client)
    assert term.lost_event.wait(SOON)
    assert first_lead.returned.wait(SOON)
    assert second_lead.started.wait(SOON)
    # a stale leader's guarded write is refused by the server
    eventually(lambda: leader_client.connected, what="the client in a new session")
    transaction = term.guarded_transaction()
    transaction.create(f"{path}-stale")
    assert isinstance(transaction.commit()[0], NoNodeError)
    assert leader_client.exists(f"{path}-stale") is None
    eventually(lambda: len(second.participants()) == 2, what="first queued again")
    assert [p.id for p in second.participants()] == ["second", "first"]
    second_lead.stop.set()
    eventually(lambda: len(first_lead.terms) == 2, what="first leads again")
    assert first_lead.terms[1].fencing_token > second_lead.terms[0].fencing_token


@pytest.fixture
def front(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


def test_a_suspended_connection_cancels_leadership_under_the_standard_policy(
    front: FaultProxy,
    zk_client_factory: ClientFactory,
    zk_path: str,
    selectors: list[LeaderSelector],
) -> None:
    path = f"{zk_path}/leader"
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    lead = Leader()
    selector = LeaderSelector(client, path, lead, "a", auto_requeue=True)
    selectors.append(selector)
    selector.start()
    assert lead.started.wait(SOON)
    front.drop_connections()
    assert lead.returned.wait(SOON)
    assert lead.terms[0].reason == "connection suspended"
    eventually(lambda: len(lead.terms) == 2, what="queued again and leading once reconnected")
    selector.close()
    eventually(lambda: children(client, path) == [], what="node deleted once lead returned")


def test_a_close_with_the_create_on_its_way_returns_once_the_node_it_made_is_gone(
    front: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """Not made after close() said the node was gone: a Java participant never lists it."""
    path = f"{zk_path}/leader"
    observer = zk_client_factory()
    observer.ensure_path(path)
    front.latency = 0.1  # the create is still on its way when close() is called
    selector = LeaderSelector(zk_client_factory(hosts=front.hosts), path, lambda _: None, "a")
    selector.start()
    assert selector.close(SOON) is True
    made: list[str] = []
    assert observer.get_children(path, watch=lambda event: made.append(event.path)) == []
    front.latency = 0.0
    threading.Event().wait(0.5)  # a create or delete still on its way has landed by now
    assert made == [] and children(observer, path) == []


def test_close_while_waiting_deletes_the_node_and_while_leading_once_lead_returns(
    zk_client_factory: ClientFactory, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    observer = zk_client_factory()
    leader_lead, waiter_lead = Leader(), Leader()
    leader = LeaderSelector(zk_client_factory(), path, leader_lead, "leader")
    waiter = LeaderSelector(zk_client_factory(), path, waiter_lead, "waiter")
    selectors += [leader, waiter]
    leader.start()
    assert leader_lead.started.wait(SOON)
    waiter.start()
    eventually(lambda: len(children(observer, path)) == 2, what="waiter queued")
    waiter.close()
    eventually(lambda: len(children(observer, path)) == 1, what="waiter's node deleted")
    leader.close()
    assert leader_lead.returned.wait(SOON)
    assert leader_lead.terms[0].reason == "selector closed"
    eventually(lambda: children(observer, path) == [], what="leader's node deleted")
    assert not waiter_lead.terms


def test_an_exception_from_lead_gives_leadership_up(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    calls: list[Leadership] = []
    called = threading.Event()

    def lead(leadership: Leadership) -> None:
        calls.append(leadership)
        called.set()
        raise RuntimeError("boom")

    selector = LeaderSelector(zk, path, lead, "a")
    selectors.append(selector)
    selector.start()
    assert called.wait(SOON)
    eventually(lambda: children(zk, path) == [], what="node deleted after the failure")
    assert calls[0].lost_event.is_set()
    called.clear()
    assert selector.requeue()
    assert called.wait(SOON)


def test_start_twice_requeue_or_close_after_close_raise(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    selector = LeaderSelector(zk, f"{zk_path}/leader", Leader(), "a")
    with pytest.raises(RuntimeError, match="not started"):
        selector.requeue()
    with pytest.raises(RuntimeError, match="has not been started"):
        selector.close()
    selectors.append(selector)
    selector.start()
    with pytest.raises(RuntimeError, match="more than once"):
        selector.start()
    selector.close()
    with pytest.raises(RuntimeError, match="Already closed"):
        selector.close()
    with pytest.raises(RuntimeError, match="close"):
        selector.requeue()


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("leader", print), {}, ValueError, "must start with / character"),
        (("/leader", "lead"), {}, TypeError, "lead must be callable"),
        (("/leader", print, 7), {}, TypeError, "id must be a str"),
        (("/leader", print, "\udc80"), {}, ValueError, "UTF-8"),
        (("/leader", print, "x" * 0x100000), {}, ValueError, "node data"),
        (("/leader", print), {"auto_requeue": 1}, TypeError, "auto_requeue"),
        (("/leader", print), {"connection_policy": "lax"}, ValueError, "connection_policy"),
    ],
)
def test_bad_input_is_refused_before_anything_is_made(
    zk: KazooClient,
    zk_path: str,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    error: type[Exception],
    match: str,
) -> None:
    path = args[0]
    full = f"{zk_path}{path}" if isinstance(path, str) and path.startswith("/") else path
    with pytest.raises(error, match=match):
        LeaderSelector(zk, full, *args[1:], **kwargs)  # type: ignore[arg-type]
    assert zk.exists(zk_path) is None


def test_an_interrupted_term_with_auto_requeue_queues_again(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    lead = Leader()
    selector = LeaderSelector(zk, f"{zk_path}/leader", lead, "a", auto_requeue=True)
    selectors.append(selector)
    selector.start()
    assert lead.started.wait(SOON)
    selector.interrupt_leadership()
    eventually(lambda: len(lead.terms) == 2, what="leading again after the interruption")
    assert lead.terms[0].reason == "leadership interrupted"
    assert selector.has_leadership()


def test_requeue_while_the_term_ends_queues_once_its_node_is_gone(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    path = f"{zk_path}/leader"
    lead_may_return = threading.Event()
    terms: list[Leadership] = []
    second = threading.Event()

    def lead(leadership: Leadership) -> None:
        terms.append(leadership)
        if len(terms) == 2:
            second.set()
            return
        leadership.lost_event.wait(SOON)
        lead_may_return.wait(SOON)  # ``lead`` outlives its term's end

    selector = LeaderSelector(zk, path, lead, "a")
    selectors.append(selector)
    selector.start()
    eventually(lambda: len(terms) == 1, what="the first term leads")
    assert not selector.requeue()  # leading: already queued
    selector.interrupt_leadership()
    assert selector.requeue() is True  # owed once the ending term's node is gone
    assert selector.requeue() is False  # asked already
    assert not second.is_set() and len(children(zk, path)) == 1
    lead_may_return.set()
    assert second.wait(SOON)
    assert terms[1].fencing_token > terms[0].fencing_token


def test_a_unit_idle_since_a_term_runs_the_next_one_and_ends_when_none_comes(
    zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A term's ``lead`` runs on a unit kept from an earlier term (none is started on its way
    to leadership); an idle unit ends once no term came for it within the linger."""
    monkeypatch.setattr(background, "LINGER", 0.5)
    units = background.Units(zk.handler)
    ran_on: list[threading.Thread] = []
    ran = threading.Semaphore(0)

    def term() -> None:
        ran_on.append(threading.current_thread())
        ran.release()

    units.run(term)
    assert ran.acquire(timeout=SOON)
    eventually(lambda: units.idle == 1, what="the unit idle")
    units.run(term)
    assert ran.acquire(timeout=SOON)
    assert ran_on[1] is ran_on[0]
    eventually(lambda: not ran_on[0].is_alive(), what="the idle unit ended")
    assert units.idle == 0


def test_idle_units_are_few_whatever_the_terms_that_ran_at_once(
    zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "LINGER", 0.5)
    units = background.Units(zk.handler)
    terms = background.MAX_IDLE_UNITS + 3
    ran_on: list[threading.Thread] = []
    started = threading.Semaphore(0)
    gate = threading.Event()

    def term() -> None:
        ran_on.append(threading.current_thread())
        started.release()
        gate.wait(SOON)

    for _ in range(terms):
        units.run(term)
    for _ in range(terms):
        assert started.acquire(timeout=SOON)
    assert len(set(ran_on)) == terms  # a term each: none waits for another's unit
    gate.set()
    eventually(
        lambda: (
            sum(thread.is_alive() for thread in ran_on) == background.MAX_IDLE_UNITS
            and units.idle == background.MAX_IDLE_UNITS
        ),
        what="only the idle units kept",
    )
    eventually(lambda: not any(thread.is_alive() for thread in ran_on), what="every unit ended")


def test_auto_requeued_terms_of_many_selectors_add_few_threads(
    zk: KazooClient, zk_path: str, selectors: list[LeaderSelector]
) -> None:
    """Queued selectors cost no thread, and their terms reuse the units of earlier ones."""
    path = f"{zk_path}/leader"
    count = 12
    terms = [0] * count
    enough = threading.Event()
    before = threading.active_count()
    peak = [before]

    def make_lead(index: int) -> Callable[[Leadership], None]:
        def lead(leadership: Leadership) -> None:
            peak[0] = max(peak[0], threading.active_count())
            terms[index] += 1
            if min(terms) >= 3:
                enough.set()

        return lead

    for index in range(count):
        selector = LeaderSelector(zk, path, make_lead(index), str(index), auto_requeue=True)
        selectors.append(selector)
        selector.start()
    assert enough.wait(SOON)
    for selector in selectors:
        assert selector.close(SOON)
    # one term leads at a time: its unit, the idle ones, and the handler's pool may run
    assert peak[0] - before <= background.MAX_IDLE_UNITS + 6, f"{peak[0] - before} threads added"
