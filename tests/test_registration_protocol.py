"""A discovery's registrations on a scripted server: no ZooKeeper, no thread, no sleep.

Each test plays the server's side of one exchange with a
:class:`~pycurator._recipes.registration.Registrar` (register, update, unregister, and the
keeper's checks after a reconnect or an expiry) and checks every request it sends, in order,
and what it keeps. The same protocol runs on a real server in test_discovery.py and
test_discovery_faults.py, and against Java Curator in interop/test_discovery_interop.py.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
)
from kazoo.protocol.states import EventType, KazooState, ZnodeStat

from pycurator._protocol.deadline import Deadline
from pycurator._protocol.discovery import ServiceInstance, ServiceType
from pycurator._protocol.discovery_json import JsonInstanceSerializer
from pycurator._protocol.errors import ServiceNotRegisteredError
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
    SetData,
)
from pycurator._protocol.steps import Steps
from pycurator._recipes.registration import Registrar

from .scripted import WATCHED, Entry, Reply, ScriptedServer, State, Timeout

BASE = "/services"
PARENT = "/services/billing"
PATH = "/services/billing/id-1"
SESSION, OTHER, NEXT = 0x51, 0x77, 0x52


def instance(**changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {"id": "id-1", "address": "10.0.0.5", "port": 8080}
    return ServiceInstance("billing", registration_time_utc=1, **{**fields, **changes})


DYNAMIC = instance()
DATA = JsonInstanceSerializer().serialize(DYNAMIC)
UPDATED = instance(port=9090)
UPDATED_DATA = JsonInstanceSerializer().serialize(UPDATED)
SEQUENTIAL = instance(service_type=ServiceType.DYNAMIC_SEQUENTIAL)
SEQUENTIAL_DATA = JsonInstanceSerializer().serialize(SEQUENTIAL)


def node(version: int = 0, owner: int = SESSION) -> ZnodeStat:
    """A node's stat: its data version and its ephemeral owner (0: persistent)."""
    return ZnodeStat(9, 9, 0, 0, version, 0, 0, owner, 0, 0, 9)


def create(data: bytes = DATA, mode: CreateMode = CreateMode.EPHEMERAL, path: str = PATH) -> Any:
    return CreateNode(path, data, mode=mode)


def made(path: str = PATH, owner: int = SESSION) -> tuple[str, ZnodeStat]:
    return path, node(0, owner)


def watched(path: str = PATH, version: int = 0, owner: int = SESSION) -> Reply:
    """The watch a registration sets on each node it makes, sent behind its create."""
    return Reply(NodeExists(path, WATCHED), node(version, owner))


def missing(path: str = PATH) -> Reply:
    """The watch sent behind a create that the server refused: no node to watch yet."""
    return Reply(NodeExists(path, WATCHED), None)


def read(data: bytes = DATA, version: int = 0, owner: int = SESSION, path: str = PATH) -> Reply:
    """A check of the node: its data read, its watch set again."""
    return Reply(GetData(path, WATCHED), (data, node(version, owner)))


class Server(ScriptedServer):
    """A scripted server a registrar is also made with (its lock, its keeper's runs, which
    run at once on the same script)."""

    def __init__(self, script: list[Entry], **options: Any) -> None:
        options.setdefault("session", SESSION)
        super().__init__(script, **options)

    def lock_object(self) -> Any:
        return threading.Lock()

    def played(self) -> None:
        """Fail unless the whole script was played (the registrar still listens)."""
        self._raise_failure()
        assert not self.script, f"the protocol ended before the script: {self.script}"

    def then(self, *script: Entry) -> None:
        """More of the script, once what came before was played."""
        self.played()
        self.script.extend(script)


def registrar(server: Server) -> Registrar:
    keeper = Registrar(server, BASE)
    keeper.start()
    return keeper


def steps_of(keeper: Registrar, wanted: ServiceInstance, data: bytes = DATA) -> Steps[None]:
    return keeper.register_steps(wanted, data, Deadline(10))


def registered(server: Server, wanted: ServiceInstance = DYNAMIC, data: bytes = DATA) -> Registrar:
    """A registrar that registered ``wanted`` at once, its parents there."""
    mode = {
        ServiceType.DYNAMIC: CreateMode.EPHEMERAL,
        ServiceType.DYNAMIC_SEQUENTIAL: CreateMode.EPHEMERAL_SEQUENTIAL,
    }.get(wanted.service_type, CreateMode.PERSISTENT)
    answer = made(PATH + "0000000001") if mode.is_sequential else made(PATH, node_owner(mode))
    server.then(Reply(create(data, mode), answer), watched(answer[0], 0, node_owner(mode)))
    keeper = registrar(server)
    server.run(steps_of(keeper, wanted, data))
    server.played()
    return keeper


def node_owner(mode: CreateMode) -> int:
    return SESSION if mode.is_ephemeral else 0


def test_a_dynamic_instance_is_an_ephemeral_node_under_container_parents() -> None:
    server = Server(
        [
            Reply(create(), error=NoNodeError()),
            missing(),
            Reply(CreateParent(PARENT), error=NoNodeError()),
            Reply(CreateParent(BASE)),
            Reply(CreateParent(PARENT)),
            Reply(create(), made()),
            watched(),
            read(),  # the first watch's answer said no node: looked at again
        ]
    )
    keeper = registrar(server)
    server.run(steps_of(keeper, DYNAMIC))
    server.played()
    assert keeper.registered() == [DYNAMIC]
    assert keeper.node_of("billing", "id-1") == PATH


@pytest.mark.parametrize(
    ("kind", "mode"),
    [
        (ServiceType.STATIC, CreateMode.PERSISTENT),
        (ServiceType.PERMANENT, CreateMode.PERSISTENT),
        (ServiceType.DYNAMIC_SEQUENTIAL, CreateMode.EPHEMERAL_SEQUENTIAL),
    ],
)
def test_each_service_type_makes_its_node_in_curators_mode(
    kind: ServiceType, mode: CreateMode
) -> None:
    wanted = instance(service_type=kind)
    data = JsonInstanceSerializer().serialize(wanted)
    answer = PATH + "0000000004" if mode.is_sequential else PATH
    server = Server(
        [
            Reply(create(data, mode), made(answer, node_owner(mode))),
            watched(answer, 0, node_owner(mode)),
        ]
    )
    keeper = registrar(server)
    server.run(steps_of(keeper, wanted, data))
    server.played()
    assert keeper.node_of("billing", "id-1") == answer


def test_a_node_of_another_session_in_the_way_is_replaced_as_curator_replaces_it() -> None:
    server = Server(
        [
            Reply(create(), error=NodeExistsError()),
            watched(version=2, owner=OTHER),
            Reply(NodeExists(PATH), node(2, OTHER)),
            Reply(DeleteNode(PATH, 2)),
            Reply(create(), made()),
            watched(),
            read(),  # the first watch's answer was another's node: looked at again
        ]
    )
    keeper = registrar(server)
    server.run(steps_of(keeper, DYNAMIC))
    server.played()


def test_a_node_our_create_made_before_its_answer_was_lost_is_kept_not_made_again() -> None:
    server = Server(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(NodeExists(PATH, WATCHED), error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(create(), error=NodeExistsError()),
            watched(),
            Reply(NodeExists(PATH), node(0, SESSION)),
            Reply(SetData(PATH, DATA), node(1, SESSION)),
        ]
    )
    keeper = registrar(server)
    server.run(steps_of(keeper, DYNAMIC))
    server.played()
    assert keeper.node_of("billing", "id-1") == PATH


def test_a_persistent_node_in_the_way_of_a_static_instance_takes_its_data() -> None:
    static = instance(service_type=ServiceType.STATIC)
    data = JsonInstanceSerializer().serialize(static)
    server = Server(
        [
            Reply(create(data, CreateMode.PERSISTENT), error=NodeExistsError()),
            watched(version=4, owner=0),
            Reply(NodeExists(PATH), node(4, 0)),
            Reply(SetData(PATH, data), node(5, 0)),
            read(data, 5, 0),  # the first watch's answer was at another version: looked at
        ]
    )
    keeper = registrar(server)
    server.run(steps_of(keeper, static, data))
    server.played()


def test_a_sequential_node_whose_answer_was_lost_is_found_again_not_made_twice() -> None:
    ours, theirs = PATH + "0000000003", PATH + "0000000002"
    mode = CreateMode.EPHEMERAL_SEQUENTIAL
    server = Server(
        [
            Reply(create(SEQUENTIAL_DATA, mode), error=ConnectionLoss(), disconnects=True),
            State(KazooState.CONNECTED),
            Reply(ListChildren(PARENT), ["id-10000000002", "id-10000000003", "id-2"]),
            Reply(NodeExists(theirs), node(0, OTHER)),
            Reply(NodeExists(ours), node(0, SESSION)),
            Reply(SetData(ours, SEQUENTIAL_DATA), node(1, SESSION)),
            watched(ours, 1),
        ]
    )
    keeper = registrar(server)
    server.run(steps_of(keeper, SEQUENTIAL, SEQUENTIAL_DATA))
    server.played()
    assert keeper.node_of("billing", "id-1") == ours
    server.then(Reply(DeleteNode(ours, 1)))
    server.run(keeper.unregister_steps("billing", "id-1"))
    server.played()


def test_a_sequential_node_is_unregistered_by_the_name_the_server_gave_it() -> None:
    server = Server([])
    keeper = registered(server, SEQUENTIAL, SEQUENTIAL_DATA)
    server.then(Reply(DeleteNode(PATH + "0000000001", 0)))
    server.run(keeper.unregister_steps("billing", "id-1"))
    server.played()
    assert keeper.registered() == []


def test_a_reconnect_checks_each_node_and_leaves_one_still_ours_alone() -> None:
    server = Server([])
    keeper = registered(server)
    server.change(KazooState.SUSPENDED)
    server.then(read())
    server.change(KazooState.CONNECTED)
    server.played()
    assert keeper.registered() == [DYNAMIC]


def test_a_reconnect_makes_a_node_deleted_meanwhile_again() -> None:
    server = Server([])
    keeper = registered(server)
    server.change(KazooState.SUSPENDED)
    server.then(
        Reply(GetData(PATH, WATCHED), error=NoNodeError()), Reply(create(), made()), watched()
    )
    server.change(KazooState.CONNECTED)
    server.played()
    assert keeper.node_of("billing", "id-1") == PATH


def test_a_reconnect_writes_back_a_node_another_client_changed() -> None:
    server = Server([])
    registered(server)
    server.change(KazooState.SUSPENDED)
    server.then(read(b"theirs", 3), Reply(SetData(PATH, DATA), node(4)))
    server.change(KazooState.CONNECTED)
    server.played()


def test_a_node_another_deletes_is_made_again_once_nobody_made_it_meanwhile() -> None:
    server = Server([])
    keeper = registered(server)
    server.then(
        Reply(GetData(PATH, WATCHED), error=NoNodeError()),
        Timeout(),  # REMADE_AFTER: another's register would have made its node by then
        Reply(GetData(PATH, WATCHED), error=NoNodeError()),
        Reply(create(), made()),
        watched(),
    )
    server.fire(PATH, EventType.DELETED)
    server.played()
    assert keeper.node_of("billing", "id-1") == PATH


def test_a_node_another_deletes_and_makes_again_at_once_is_left_to_it() -> None:
    """Curator's register deletes a node in its way and makes its own: made again at once,
    ours would take the instance back from the last registrar, as no Curator does."""
    server = Server([])
    keeper = registered(server)
    server.then(
        Reply(GetData(PATH, WATCHED), error=NoNodeError()),
        Timeout(),
        read(b"theirs", 0, OTHER),
    )
    server.fire(PATH, EventType.DELETED)
    server.played()
    assert keeper.registered() == [DYNAMIC] and keeper.node_of("billing", "id-1") is None


def test_a_node_another_made_in_place_of_ours_is_left_to_it_until_a_reconnect() -> None:
    """Another registered the instance since (deleted ours, made its own): taking it back
    would have the other take it back in turn, for ever; Curator's register takes it at the
    next reconnect only, and so does this."""
    server = Server([])
    keeper = registered(server)
    server.then(read(b"theirs", 0, OTHER))
    server.fire(PATH, EventType.DELETED)
    server.then(read(b"theirs", 1, OTHER))
    server.fire(PATH, EventType.CHANGED)
    server.played()
    assert keeper.registered() == [DYNAMIC] and keeper.node_of("billing", "id-1") is None
    server.change(KazooState.SUSPENDED)
    server.then(
        Reply(create(), error=NodeExistsError()),
        watched(version=1, owner=OTHER),
        Reply(NodeExists(PATH), node(1, OTHER)),
        Reply(DeleteNode(PATH, 1)),
        Reply(create(), made()),
        watched(),
        read(),  # the first watch's answer was another's node: looked at again
    )
    server.change(KazooState.CONNECTED)
    server.played()


def test_data_another_writes_is_left_be_until_a_reconnect_writes_ours_back() -> None:
    server = Server([])
    registered(server)
    server.then(read(b"theirs", 1))
    server.fire(PATH, EventType.CHANGED)
    server.played()
    server.change(KazooState.SUSPENDED)
    server.then(read(b"theirs", 1), Reply(SetData(PATH, DATA), node(2)))
    server.change(KazooState.CONNECTED)
    server.played()


def test_with_watch_instances_data_another_writes_is_taken_as_the_instance() -> None:
    server = Server([])
    keeper = Registrar(server, BASE, JsonInstanceSerializer().deserialize)
    keeper.start()
    server.then(Reply(create(), made()), watched())
    server.run(steps_of(keeper, DYNAMIC))
    server.then(read(UPDATED_DATA, 1))
    server.fire(PATH, EventType.CHANGED)
    server.played()
    assert keeper.registered() == [UPDATED]
    server.change(KazooState.SUSPENDED)
    server.then(read(UPDATED_DATA, 1))  # in step: nothing written back
    server.change(KazooState.CONNECTED)
    server.played()


def test_an_expiry_makes_a_sequential_node_again_in_the_new_session_and_only_one() -> None:
    server = Server([])
    keeper = registered(server, SEQUENTIAL, SEQUENTIAL_DATA)
    server.change(KazooState.LOST)
    again = PATH + "0000000009"
    mode = CreateMode.EPHEMERAL_SEQUENTIAL
    server.then(Reply(create(SEQUENTIAL_DATA, mode), made(again, NEXT)), watched(again, 0, NEXT))
    server.change(KazooState.CONNECTED, session=NEXT)
    server.played()
    assert keeper.node_of("billing", "id-1") == again


def test_an_update_writes_the_node_and_a_reconnect_finds_it_in_step() -> None:
    server = Server([])
    keeper = registered(server)
    server.then(Reply(SetData(PATH, UPDATED_DATA), node(1)))
    server.run(keeper.update_steps(UPDATED, UPDATED_DATA, Deadline(10)))
    assert keeper.registered() == [UPDATED]
    server.change(KazooState.SUSPENDED)
    server.then(read(UPDATED_DATA, 1))
    server.change(KazooState.CONNECTED)
    server.played()


def test_an_update_to_what_the_node_held_is_checked_and_put_back_over_anothers_write() -> None:
    """Curator's ``updateService`` always writes: another client's write not heard of yet
    (its watch still on the way), an update to what we wrote before puts ours back, where
    trusting what we wrote last would send nothing; a node in step is left as it is."""
    server = Server([])
    keeper = registered(server)
    server.then(read(b"theirs", 1), Reply(SetData(PATH, DATA), node(2)))
    server.run(keeper.update_steps(DYNAMIC, DATA, Deadline(10)))
    server.then(read(DATA, 2))
    server.run(keeper.update_steps(DYNAMIC, DATA, Deadline(10)))
    server.played()
    assert keeper.registered() == [DYNAMIC]


def test_an_update_of_an_instance_not_registered_sends_nothing() -> None:
    server = Server([])
    keeper = registrar(server)
    with pytest.raises(ServiceNotRegisteredError, match="billing/id-1"):
        server.run(keeper.update_steps(UPDATED, UPDATED_DATA, Deadline(10)))
    server.played()


def test_an_update_that_changes_the_type_makes_the_node_in_the_new_mode() -> None:
    server = Server([])
    keeper = registered(server)
    static = instance(service_type=ServiceType.STATIC)
    data = JsonInstanceSerializer().serialize(static)
    server.then(
        Reply(DeleteNode(PATH, 0)),
        Reply(create(data, CreateMode.PERSISTENT), made(owner=0)),
        watched(owner=0),
    )
    server.run(keeper.update_steps(static, data, Deadline(10)))
    server.played()


def test_registering_again_checks_the_node_and_writes_nothing_when_it_is_in_step() -> None:
    server = Server([])
    keeper = registered(server)
    server.then(read())
    server.run(steps_of(keeper, DYNAMIC))
    server.played()


def test_unregistering_deletes_the_node_at_its_version_once() -> None:
    server = Server([])
    keeper = registered(server)
    server.then(Reply(DeleteNode(PATH, 0)))
    server.run(keeper.unregister_steps("billing", "id-1"))
    server.run(keeper.unregister_steps("billing", "id-1"))  # again: nothing to do
    server.played()
    assert keeper.registered() == []


def test_an_unregister_met_by_a_changed_node_deletes_it_while_it_is_ours() -> None:
    server = Server([])
    keeper = registered(server)
    server.then(
        Reply(DeleteNode(PATH, 0), error=BadVersionError()),
        Reply(NodeExists(PATH), node(2)),
        Reply(DeleteNode(PATH, 2)),
    )
    server.run(keeper.unregister_steps("billing", "id-1"))
    server.played()


def test_an_unregister_while_disconnected_returns_at_once_and_deletes_once_back() -> None:
    server = Server([])
    keeper = registered(server)
    server.change(KazooState.SUSPENDED)
    server.run(keeper.unregister_steps("billing", "id-1"))
    assert keeper.registered() == []
    server.then(Reply(DeleteNode(PATH, 0)))
    server.change(KazooState.CONNECTED)
    server.played()


def test_an_unregister_after_an_expiry_leaves_the_node_of_the_new_owner_alone() -> None:
    server = Server([])
    keeper = registered(server)
    server.change(KazooState.LOST)
    server.run(keeper.unregister_steps("billing", "id-1"))
    server.played()
    server.change(KazooState.CONNECTED, session=NEXT)  # nothing left to make or delete
    server.played()


def test_an_error_no_retry_fixes_is_raised_and_leaves_nothing_registered() -> None:
    server = Server([Reply(create(), error=NoAuthError()), missing()])
    keeper = registrar(server)
    with pytest.raises(NoAuthError):
        server.run(steps_of(keeper, DYNAMIC))
    server.played()
    assert keeper.registered() == []
    server.change(KazooState.SUSPENDED)
    server.change(KazooState.CONNECTED)  # nothing to check
    server.played()


def test_closing_deletes_every_node_and_stops_following_the_connection() -> None:
    server = Server([])
    keeper = registered(server)
    other = instance(id="id-2", service_type=ServiceType.STATIC)
    data = JsonInstanceSerializer().serialize(other)
    server.then(
        Reply(create(data, CreateMode.PERSISTENT, PARENT + "/id-2"), made(owner=0)),
        watched(PARENT + "/id-2", owner=0),
    )
    server.run(steps_of(keeper, other, data))
    server.then(Reply(DeleteNode(PATH, 0)), Reply(DeleteNode(PARENT + "/id-2", 0)))
    server.run(keeper.close_steps())
    server.finish()
    assert keeper.registered() == []
