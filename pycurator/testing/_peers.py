"""What the Java peers of the other lock systems share: where their jars are, a dedicated
thread per peer, a ZooKeeper session per peer, and the lock peer's interface.

The jars: Debian's ZooKeeper recipes (lock and election), log4j 1.2 and Guava from
``/usr/share/java``, and menagerie and ZkLocker from the seed-systems folder
(:func:`seed_systems_dir`). :func:`systems_classpath` lists those present; the kit's
:func:`~pycurator.testing.start_jvm` appends them to Curator's classpath, since JPype starts one
JVM per process. A peer whose jar is missing fails when it is made, never at JVM start.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from ._curator import MENAGERIE_JAR, ZKLOCKER_JAR, close_on_shutdown, jclass, seed_systems_dir
from ._expire import expire_session

T = TypeVar("T")

#: Bound for a Java call that does not wait for a lock (a create, a delete, a close).
CALL_TIMEOUT = 60.0
#: How long a peer keeps interrupting a wait it cancels before it gives up on it.
CANCEL_TIMEOUT = 20.0
#: The session timeout each peer asks for, in milliseconds.
SESSION_TIMEOUT_MS = 10_000


def system_class(name: str, jar: str) -> Any:
    """The Java class ``name`` from ``jar``; ``RuntimeError`` naming the jar when the JVM
    cannot load it (the jar was missing when the JVM started)."""
    if jar in (MENAGERIE_JAR, ZKLOCKER_JAR):
        seed_systems_dir()
    try:
        return jclass(name)
    except TypeError as exc:  # JPype's "class not found"
        raise RuntimeError(
            f"{name} is not on the JVM's classpath: {jar} must exist when the JVM starts"
        ) from exc


_log4j_lock = threading.Lock()
_log4j_quiet = False


def quiet_log4j() -> None:
    """Give log4j 1.2's root logger one console appender at WARN (menagerie logs through it, and
    an unconfigured log4j prints "No appenders" warnings); once per process."""
    global _log4j_quiet
    with _log4j_lock:
        if _log4j_quiet:
            return
        root = system_class("org.apache.log4j.Logger", "log4j-1.2.jar").getRootLogger()
        root.removeAllAppenders()
        root.setLevel(jclass("org.apache.log4j.Level").WARN)
        layout = jclass("org.apache.log4j.PatternLayout")("[log4j] %p %c{1}: %m%n")
        root.addAppender(jclass("org.apache.log4j.ConsoleAppender")(layout, "System.err"))
        _log4j_quiet = True


class PeerThread:
    """One daemon thread that runs a peer's Java calls in order (menagerie's locks belong to the
    thread that took them). Each call starts with Java's interrupt flag cleared."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._java_thread: Any = None
        self._current: Future[Any] | None = None
        self._uninterruptible: set[Future[Any]] = set()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._java_thread = self.call(lambda: jclass("java.lang.Thread").currentThread())

    def _run(self) -> None:
        interrupted = jclass("java.lang.Thread").interrupted
        while (item := self._calls.get()) is not None:
            call, future = item
            if not future.set_running_or_notify_cancel():
                continue
            self._current = future
            try:
                interrupted()
                future.set_result(call())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)
            finally:
                self._current = None

    def submit(self, call: Callable[[], T], *, interruptible: bool = True) -> Future[T]:
        """Run ``call`` on this thread after the calls before it; ``interruptible=False`` for
        a Java call that ignores interrupts (:meth:`cancel_current` then gives up at once)."""
        if not self._thread.is_alive():
            raise RuntimeError(f"{self._thread.name} has stopped")
        future: Future[T] = Future()
        if not interruptible:
            self._uninterruptible.add(future)
            future.add_done_callback(self._uninterruptible.discard)
        self._calls.put((call, future))
        return future

    def call(self, call: Callable[[], T], timeout: float = CALL_TIMEOUT) -> T:
        """Run ``call`` on this thread and return its result (or raise its error)."""
        try:
            return self.submit(call).result(timeout)
        except FutureTimeout:
            raise TimeoutError(f"{self._thread.name}: a Java call took over {timeout}s") from None

    def interrupt_until_done(self, future: Future[Any], timeout: float = CANCEL_TIMEOUT) -> bool:
        """Interrupt this thread's Java call until ``future`` is done (a recipe that retries
        after an interrupt needs several); False if it is still running after ``timeout``."""
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end:
            self._java_thread.interrupt()
            with contextlib.suppress(Exception):
                future.exception(0.05)
        return future.done()

    def cancel_current(self, timeout: float = CANCEL_TIMEOUT) -> bool:
        """Interrupt the call running now, if any, until it ends; False if it still runs
        after ``timeout`` (a wait that ignores interrupts, as menagerie's ``lock()``)."""
        current = self._current
        if current is None:
            return True
        if current in self._uninterruptible:
            return False
        return self.interrupt_until_done(current, timeout)

    def stop(self, timeout: float = CALL_TIMEOUT) -> None:
        """End the thread after the calls already submitted."""
        self._calls.put(None)
        self._thread.join(timeout)


def finished(future: Future[T], timeout: float | None, thread: PeerThread) -> T | None:
    """``future``'s result within ``timeout`` seconds (None: however long it takes); after that
    the thread's Java call is interrupted until it ends, and the result is None."""
    try:
        return future.result(timeout)
    except FutureTimeout:
        if not thread.interrupt_until_done(future):
            raise TimeoutError("a cancelled Java wait did not end") from None
        try:
            return future.result(0)
        except Exception:  # the interrupt ended it
            return None


class Session:
    """A peer's thread and ZooKeeper session: a raw ``org.apache.zookeeper.ZooKeeper`` here;
    menagerie's session manager in :class:`ManagedSession`."""

    def __init__(self, connect: str, name: str, session_timeout_ms: int) -> None:
        self.connect = connect
        self.thread = PeerThread(name)
        self.session_timeout_ms = session_timeout_ms
        self._handle: Any = None
        try:
            self.thread.call(self._open)
        except BaseException:
            self.thread.stop(0)
            raise

    def _open(self) -> None:
        import jpype

        connected = threading.Event()

        def process(event: Any) -> None:
            if str(event.getState()) == "SyncConnected":
                connected.set()

        watcher = jpype.JProxy("org.apache.zookeeper.Watcher", dict={"process": process})
        handle = jclass("org.apache.zookeeper.ZooKeeper")(
            self.connect, self.session_timeout_ms, watcher
        )
        self._watcher = watcher  # the proxy lives as long as the session
        if not connected.wait(CALL_TIMEOUT):
            handle.close()
            raise TimeoutError(f"ZooKeeper did not connect to {self.connect}")
        self._handle = handle

    def zookeeper(self) -> Any:
        """The session's current ``ZooKeeper`` handle."""
        return self._handle

    @property
    def session_id(self) -> int:
        """The id of the peer's current ZooKeeper session."""
        return int(self.zookeeper().getSessionId())

    @property
    def session_password(self) -> bytes:
        return bytes(self.zookeeper().getSessionPasswd())

    def expire(self, timeout: float = 10.0) -> None:
        """End the session on the server (:func:`~pycurator.testing.expire_session`)."""
        handle = self.zookeeper()
        password = bytes(handle.getSessionPasswd())
        expire_session(self.connect, int(handle.getSessionId()), password, timeout)

    def close(self, close_java: Callable[[], None]) -> None:
        """Cancel a wait in progress (it ends with an error), run ``close_java`` and close the
        session on the peer's thread, then end the thread. A wait that ignores interrupts
        keeps the thread: then both run here, and the thread (a daemon) ends after its wait."""
        if self.thread.cancel_current():
            try:
                self.thread.call(close_java)
            finally:
                try:
                    self.thread.call(self._close)
                finally:
                    self.thread.stop()
        else:
            try:
                close_java()
            finally:
                try:
                    self._close()
                finally:
                    self.thread.stop(0)

    def _close(self) -> None:
        if self._handle is not None:
            self._handle.close()


class ManagedSession(Session):
    """A session through menagerie's ``DefaultZkSessionManager(connect, timeout)``: after an
    expiry, its next ``getZooKeeper()`` opens a new session."""

    manager: Any

    def _open(self) -> None:
        manager = system_class("org.menagerie.DefaultZkSessionManager", MENAGERIE_JAR)
        self.manager = manager(self.connect, self.session_timeout_ms)
        try:
            self.manager.getZooKeeper().exists("/", False)  # it connects lazily
        except BaseException:
            self.manager.closeSession()
            raise

    def zookeeper(self) -> Any:
        return self.manager.getZooKeeper()

    def _close(self) -> None:
        self.manager.closeSession()


_peers: list[Peer] = []
_peers_lock = threading.Lock()


def millis(timeout: float) -> tuple[int, Any]:
    """``timeout`` seconds as Java's ``(long, TimeUnit.MILLISECONDS)``."""
    return max(0, int(timeout * 1000)), jclass("java.util.concurrent.TimeUnit").MILLISECONDS


def proxy(interface: str, methods: dict[str, Callable[..., Any]]) -> Any:
    """A Java object of ``interface`` whose methods are ``methods``."""
    import jpype

    return jpype.JProxy(interface, dict=methods)


def make_on(session: Session, make: Callable[[], T]) -> T:
    """Make a peer's Java object on its thread; close the session if that fails."""
    try:
        return session.thread.call(make)
    except BaseException:
        session.close(lambda: None)
        raise


class Peer:
    """A Java peer: one :class:`Session` (its own thread and ZooKeeper session)."""

    session: Session

    def _register(self) -> None:
        with _peers_lock:
            _peers.append(self)

    @property
    def session_id(self) -> int:
        """The id of this peer's own ZooKeeper session."""
        return self.session.session_id

    @property
    def session_password(self) -> bytes:
        return self.session.session_password

    def expire(self, timeout: float = 10.0) -> None:
        """Expire this peer's session on the server."""
        self.session.expire(timeout)

    def close(self) -> None:
        """Free everything: the system's object, the session, the thread. Idempotent."""
        with _peers_lock:
            if self not in _peers:
                return
            _peers.remove(self)
        self.session.close(self._close_java)

    def _close_java(self) -> None:
        """Close the system's own object, before the session closes (on the peer's thread)."""


def close_all_peers() -> None:
    """Close every peer still open (each one's error is swallowed so the rest close too)."""
    with _peers_lock:
        peers = list(_peers)
    for peer in reversed(peers):
        with contextlib.suppress(Exception):
            peer.close()


close_on_shutdown(close_all_peers)


class LockPeer(Peer):
    """A Java lock behind pycurator's interface: ``acquire(timeout=None) -> bool`` (False on
    timeout; 0 tries once), ``release()``, ``is_held()``, ``with``."""

    def acquire(self, timeout: float | None = None) -> bool:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def is_held(self) -> bool:
        raise NotImplementedError

    def __enter__(self) -> LockPeer:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
