"""What only some lock recipes promise, the same from threads and from asyncio tasks: the
read/write lock's downgrade, the semaphore's lease count, the multi-lock's all or nothing."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import ConnectionClosedError

from ..support import SOON, eventually
from .actors import Actor
from .fronts import Front
from .observe import nodes


def test_the_writer_may_take_the_read_lock_and_keep_it_after_releasing_the_write_lock(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    rw = front.make("InterProcessReadWriteLock", front.client(), zk_path)
    p = front.actor(rw, "downgrader")
    write, read = p.view(rw.write_lock()), p.view(rw.read_lock())
    other_rw = front.make("InterProcessReadWriteLock", front.client(), zk_path)
    other = front.actor(other_rw.write_lock(), "writer")
    assert write.do("acquire", SOON) is True
    assert read.do("acquire", 0) is True
    write.do("release")
    assert len(nodes(observer, [zk_path])) == 1
    assert other.do("acquire", 0.2) is False  # still read
    read.do("release")
    assert other.do("acquire", SOON) is True
    other.do("release")
    assert nodes(observer, [zk_path]) == []


def test_a_reader_never_gets_the_write_lock(front: Front, zk_path: str) -> None:
    client = front.client()
    rw = front.make("InterProcessReadWriteLock", client, zk_path)
    p = front.actor(rw)
    write, read = p.view(rw.write_lock()), p.view(rw.read_lock())
    assert read.do("acquire", SOON) is True
    held = nodes(client, [zk_path])
    assert write.do("acquire", 0.3) is False
    assert nodes(client, [zk_path]) == held
    read.do("release")
    assert nodes(client, [zk_path]) == []


def test_a_semaphore_of_two_leases_admits_two_and_queues_the_third(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    leases = f"{zk_path}/leases"
    p1, p2, p3 = (
        front.actor(front.make("InterProcessSemaphoreV2", front.client(), zk_path, 2))
        for _ in range(3)
    )
    first, second = p1.do("acquire", SOON), p2.do("acquire", SOON)
    assert first is not None and second is not None
    assert p3.do("acquire", 0.2) is None
    assert len(nodes(observer, [leases])) == 2
    waiting = p3.start("acquire", SOON)
    eventually(lambda: len(nodes(observer, [leases])) == 3, what="the third queued")
    assert not waiting.done()
    p1.view(first).do("close")
    third = waiting.result()
    assert third is not None and third.fencing_token > second.fencing_token
    p2.view(second).do("close")
    p3.view(third).do("close")
    assert nodes(observer, [leases]) == []


def test_a_multi_lock_takes_all_or_none(front: Front, zk_path: str) -> None:
    observer = front.client()
    paths = [f"{zk_path}/one", f"{zk_path}/two"]
    blocker = front.actor(front.make("InterProcessMutex", front.client(), paths[1]))
    multi = front.actor(front.make("InterProcessMultiLock", front.client(), paths))
    assert blocker.do("acquire", SOON) is True
    assert multi.do("acquire", 0.3) is False
    assert nodes(observer, [paths[0]]) == []
    assert multi.do("is_acquired_in_this_process") is False
    blocker.do("release")
    assert multi.do("acquire", SOON) is True
    assert multi.do("is_held") is True
    multi.do("release")
    assert nodes(observer, paths) == []


def test_lock_data_is_the_deprecated_name_of_node_data(front: Front, zk_path: str) -> None:
    client = front.client()
    with pytest.warns(DeprecationWarning, match="lock_data"):
        rw = front.make("InterProcessReadWriteLock", client, zk_path, lock_data=b"old name")
    p = front.actor(rw)
    write, read = p.view(rw.write_lock()), p.view(rw.read_lock())
    assert write.do("acquire", SOON) is True
    assert read.do("acquire", 0) is True
    assert [client.get(path)[0] for path in nodes(client, [zk_path])] == [b"old name"] * 2
    read.do("release")
    write.do("release")
    with pytest.raises(TypeError):
        front.make("InterProcessReadWriteLock", client, zk_path, b"new", lock_data=b"old")


def test_a_multi_lock_whose_member_fails_releases_the_others_and_raises_its_error(
    front: Front, zk_path: str
) -> None:
    observer, closed = front.client(), front.client()
    closed.stop()  # the second member's client: its acquire raises
    first = front.make("InterProcessMutex", front.client(), f"{zk_path}/one")
    broken = front.make("InterProcessMutex", closed, f"{zk_path}/two")
    multi = front.actor(front.make("InterProcessMultiLock", [first, broken]))
    with pytest.raises(ConnectionClosedError):
        multi.do("acquire", SOON)
    assert nodes(observer, [f"{zk_path}/one"]) == []
    assert multi.view(first).do("is_acquired_in_this_process") is False


class AskedMember:
    """A multi-lock member that says whether its hold is real (``is_held``) but has no
    ``check``: it delegates to a lock of either front end."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock

    def acquire(self, timeout: float | None = None) -> Any:
        return self.lock.acquire(timeout)

    def release(self) -> Any:
        return self.lock.release()

    def is_acquired_in_this_process(self) -> bool:
        return bool(self.lock.is_acquired_in_this_process())

    def is_held(self) -> Any:
        return self.lock.is_held()


def outcome(actor: Actor, op: str) -> object:
    """What ``op`` gave: its result, or its exception's type."""
    try:
        return actor.do(op)
    except Exception as exc:
        return type(exc)


def multi_lock_answers(front: Front, path: str, members: str) -> dict[str, object]:
    """What a multi-lock's ``is_held`` and ``check`` say while held, to another participant,
    and once a member's node is deleted on the server."""
    observer, client = front.client(), front.client()
    if members == "paths":
        multi = front.make("InterProcessMultiLock", client, [f"{path}/followed", f"{path}/b"])
        follower = multi.locks[0]
    else:
        follower = front.make("InterProcessMutex", client, f"{path}/followed")
        mutex = front.make("InterProcessSemaphoreMutex", client, f"{path}/mutex")
        multi = front.make("InterProcessMultiLock", [mutex, AskedMember(follower)])
    holder, other = front.actor(multi, "holder"), front.actor(multi, "other")
    answers: dict[str, object] = {"before": outcome(holder, "is_held")}
    assert holder.do("acquire", SOON) is True
    answers |= {"held": outcome(holder, "is_held"), "checked": outcome(holder, "check")}
    answers |= {
        "elsewhere": outcome(other, "is_held"),
        "checked elsewhere": outcome(other, "check"),
    }
    observer.delete(nodes(observer, [f"{path}/followed"])[0])
    member = holder.view(follower)
    eventually(lambda: member.do("is_held") is False, what="the member's hold ended")
    answers |= {"lost": outcome(holder, "is_held"), "checked lost": outcome(holder, "check")}
    holder.do("release")
    return answers


@pytest.mark.parametrize("members", ["paths", "locks"])
def test_a_multi_lock_answers_is_held_alike_on_both_front_ends(
    both_fronts: list[Front], zk_path: str, members: str
) -> None:
    threads, tasks = (
        multi_lock_answers(front, f"{zk_path}/{front.name}", members) for front in both_fronts
    )
    assert threads == tasks
