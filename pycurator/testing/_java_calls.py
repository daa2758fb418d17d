"""What the Java peers of Curator's other recipes share: bytes both ways, calls into Java that
``close()`` and the kit's shutdown can end, listeners that record what they are told, and the
register of open peers.

A peer's calls run on the thread that makes them (a Python thread that calls into Java is a Java
thread), so one peer may be used from several threads at once, as its Curator object may be: a
thread waits on a barrier while another removes it. A call that waits (a barrier's, or an
atomic value's under its lock) ends with its own timeout, or when the peer is closed: ``close()``
interrupts every call of the peer still in Java and waits for it to come back, and the kit's
shutdown closes every peer still open before it closes Curator's clients and the JVM.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

from ._curator import CURATOR, close_on_shutdown, jclass

T = TypeVar("T")
P = TypeVar("P", bound="JavaRecipePeer")

#: Curator's recipes, as a Java package.
CURATOR_RECIPES = f"{CURATOR}.framework.recipes"
#: How long ``close()`` keeps interrupting a peer's calls still in Java before it gives up.
CLOSE_WAIT = 20.0


class PeerClosedError(RuntimeError):
    """A peer's call was ended by the peer's ``close()`` (or the kit's shutdown)."""


def recipe_class(name: str) -> Any:
    """A class of Curator's recipes by its name below ``...framework.recipes``, e.g.
    ``"nodes.PersistentNode"``."""
    return jclass(f"{CURATOR_RECIPES}.{name}")


def java_bytes(data: bytes) -> Any:
    """``data`` as a Java ``byte[]``."""
    import jpype

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    return jpype.JArray(jpype.JByte)(bytes(data))


def python_bytes(array: Any) -> bytes | None:
    """A Java ``byte[]`` as bytes (Java's null as None)."""
    return None if array is None else bytes(array)


def millis(timeout: float) -> tuple[int, Any]:
    """``timeout`` seconds as Java's ``(long, TimeUnit.MILLISECONDS)``, never below 0."""
    return max(0, int(timeout * 1000)), jclass("java.util.concurrent.TimeUnit").MILLISECONDS


def java_local_address() -> bytes:
    """What Curator writes in a node it creates without data: its
    ``CuratorFrameworkFactory.getLocalAddress()``, the local host's address as text (empty when
    the host name does not resolve)."""
    factory = jclass(f"{CURATOR}.framework.CuratorFrameworkFactory")
    return bytes(factory.getLocalAddress())


def java_mode(mode: object) -> Any:
    """ZooKeeper's ``CreateMode`` named by ``mode``: a name such as ``"EPHEMERAL"``, or an enum
    member with that name."""
    name = mode if isinstance(mode, str) else getattr(mode, "name", None)
    modes = jclass("org.apache.zookeeper.CreateMode")
    if not isinstance(name, str) or not hasattr(modes, name):
        raise ValueError(f"not one of ZooKeeper's create modes: {mode!r}")
    return getattr(modes, name)


def proxy(interface: str, methods: dict[str, Callable[..., Any]]) -> Any:
    """A Java object implementing ``interface`` by ``methods``."""
    import jpype

    return jpype.JProxy(interface, dict=methods)


class Told:
    """What a listener was told, in order, with waits on it (bounded, never a sleep)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._items: list[Any] = []

    def add(self, item: Any) -> None:
        with self._changed:
            self._items.append(item)
            self._changed.notify_all()

    def items(self) -> list[Any]:
        with self._changed:
            return list(self._items)

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout: float) -> bool:
        """Wait until ``predicate(items)`` holds; False after ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self._items), timeout)


_open: list[JavaRecipePeer] = []
_open_lock = threading.Lock()


class JavaRecipePeer:
    """A Curator recipe object, ``java``, on the Curator client ``curator``; ``close()`` frees
    it (idempotent), as do leaving a ``with`` block and the kit's shutdown."""

    curator: Any
    java: Any

    def __init__(self, curator: Any) -> None:
        self.curator = curator
        self._closed = False
        self._calls: dict[int, Any] = {}  # Python thread id -> its Java thread, while in Java
        self._calls_changed = threading.Condition()
        with _open_lock:
            _open.append(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def calls_in_java(self) -> int:
        """How many of this peer's calls are in Java now (a test can wait until one waits)."""
        with self._calls_changed:
            return len(self._calls)

    def _call(self, what: str, call: Callable[[], T]) -> T:
        """Run ``call`` (Java) here, where ``close()`` can interrupt it; a call it ends raises
        :class:`PeerClosedError` naming ``what``."""
        if self._closed:
            raise PeerClosedError(f"{self!r} is closed: {what} refused")
        with self._in_java():
            try:
                return call()
            except Exception:
                if not self._closed:
                    raise
        # Java's error is dropped inside the call, while close() still waits for it: the JVM
        # may be shutting down once close() returns, and Python must not touch Java's error then.
        raise PeerClosedError(f"{self!r} was closed during {what}")

    @contextlib.contextmanager
    def _in_java(self) -> Iterator[None]:
        thread = jclass("java.lang.Thread")
        me = threading.get_ident()
        if me in self._calls:  # a call made from a listener of this peer's own call
            yield
            return
        thread.interrupted()  # a stale interrupt would end this call at its first wait
        with self._calls_changed:
            self._calls[me] = thread.currentThread()
        try:
            yield
        finally:
            thread.interrupted()  # an interrupt that came late must not reach the next call
            with self._calls_changed:
                del self._calls[me]
                self._calls_changed.notify_all()

    def close(self) -> None:
        """End the peer's calls still in Java (interrupting them), then close its Java object.
        Idempotent; an error of the Java close is raised once the peer is forgotten."""
        with _open_lock:
            if self._closed:
                return
            self._closed = True
            if self in _open:
                _open.remove(self)
        end = time.monotonic() + CLOSE_WAIT
        with self._calls_changed:
            while self._calls and time.monotonic() < end:
                for java_thread in self._calls.values():
                    java_thread.interrupt()
                self._calls_changed.wait(0.05)
        if "java" in vars(self):  # else making the Java object failed: nothing to close
            self._close_java()

    def _close_java(self) -> None:
        """Close the recipe's Java object."""
        self.java.close()

    def __enter__(self: P) -> P:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def close_all_recipe_peers() -> None:
    """Close every peer still open, the newest first (one's error does not keep the rest open)."""
    with _open_lock:
        peers = list(_open)
    for peer in reversed(peers):
        with contextlib.suppress(Exception):
            peer.close()


def close_recipe_peers_on(curator: Any) -> None:
    """Close every open peer made on the Curator client ``curator`` (before it closes)."""
    with _open_lock:
        peers = [peer for peer in _open if bool(peer.curator.equals(curator))]
    for peer in reversed(peers):
        with contextlib.suppress(Exception):
            peer.close()


close_on_shutdown(close_all_recipe_peers)
