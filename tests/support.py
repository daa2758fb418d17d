"""Small helpers shared by the tests."""

from __future__ import annotations

import shutil
import stat
import subprocess
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

from pycurator._client import kazoo_internals
from pycurator._client.records import ReducedChildren
from pycurator.testing import (
    SOON,
    STEADY_RECONNECT,
    ClientFactory,
    FaultProxy,
    ZooKeeperServer,
    children,
    eventually,
)

__all__ = [
    "SOON",
    "STEADY_RECONNECT",
    "ClientFactory",
    "RequestCounter",
    "Worker",
    "children",
    "delete_when_empty",
    "eventually",
    "java_with",
    "restart_behind",
]


#: ZooKeeper's switch for TTL nodes.
TTL_SWITCH = "zookeeper.extendedTypesEnabled"


def java_with(folder: Path, enabled: bool) -> str:
    """A ``java`` in ``folder`` that runs ZooKeeper with TTL nodes ``enabled`` whatever the kit
    asks (it turns them on): the switch is set again right before the classpath, where the last
    setting wins."""
    script = folder / f"java-ttl-{'on' if enabled else 'off'}"
    value = "true" if enabled else "false"
    script.write_text(
        "#!/bin/sh\n"
        'for arg; do shift; [ "$arg" = -cp ] && set -- "$@" '
        f'"-D{TTL_SWITCH}={value}"; set -- "$@" "$arg"; done\n'
        'exec java "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def restart_behind(proxy: FaultProxy, server: ZooKeeperServer) -> None:
    """Restart ``server`` (data kept) while ``proxy`` holds new connections back until it serves:
    a client that met the server still starting would wait out its whole handshake timeout."""
    proxy.blackhole()
    try:
        server.restart()
    finally:
        proxy.heal()


def delete_when_empty(client: KazooClient, path: str, timeout: float = SOON) -> None:
    """Delete ``path`` once it has no children, failing after ``timeout`` seconds.

    A closed Curator ``LeaderLatch`` whose listing was in flight at ``close()`` finds its node
    gone, resets, and creates a node that its create callback deletes again; a parent seen
    empty may so gain a child for a moment. Retrying the delete rides that out, and a child
    that stays fails the test."""

    def deleted() -> bool:
        try:
            client.delete(path)
        except NotEmptyError:
            return False
        except NoNodeError:
            pass
        return True

    eventually(deleted, timeout, what=f"{path} empty and deleted")


class RequestCounter:
    """Counts the requests a real kazoo client sends, in all and by type (``GetChildren``,
    ``Exists``...), as they are queued on its connection."""

    def __init__(self, client: KazooClient) -> None:
        self.counts: Counter[str] = Counter()
        #: each request's type, and the thread that sent it, in order
        self.senders: list[tuple[str, threading.Thread]] = []
        self._restore = kazoo_internals.observe_calls(client, self._saw)

    def _saw(self, request: Any) -> None:
        # a listing reduced as it is read is a getChildren on the wire
        kind = "GetChildren" if isinstance(request, ReducedChildren) else type(request).__name__
        self.counts[kind] += 1
        self.senders.append((kind, threading.current_thread()))

    @property
    def count(self) -> int:
        return self.total()

    def total(self) -> int:
        return sum(self.counts.values())

    def close(self) -> None:
        self._restore()


class Worker(threading.Thread):
    """A thread running ``target`` that keeps its result or exception for the test to check."""

    def __init__(self, target: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._target_fn = target
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.result = self._target_fn()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def outcome(self, timeout: float = SOON) -> Any:
        """Join and return the result, re-raising the thread's exception."""
        self.join(timeout)
        if self.is_alive():
            raise AssertionError(f"thread still running after {timeout}s")
        if self.error is not None:
            raise self.error
        return self.result


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` and its key, made in ``folder`` with the
    openssl command (a test that needs one is skipped where openssl is missing)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
