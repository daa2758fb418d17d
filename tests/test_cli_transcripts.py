"""The transcripts of docs/cli.md (a ```text block that starts with ``$ pycurator ...``, then what
it prints) are what the command prints: each runs against the test server, in a chroot of its
own, once the state it shows is set up, and must print the documented lines (``...`` stands for
any text). A transcript that cannot run here says why in :data:`NOT_RUN`."""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.discovery import ServiceDiscovery, ServiceInstance, UriSpec
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from pycurator.zkrecipes import WriteLock

from .cli_support import cli_env
from .support import SOON

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
TRANSCRIPT = re.compile(r"^```text\n\$ (pycurator .*?)^```", re.M | re.S)

#: Transcripts shown but not run here, and why.
NOT_RUN = {
    "pycurator inspect --hosts zk1.example.invalid:2181,127.0.0.1:2182 --connect-timeout 3 "
    "/locks": "the resolver's words and what listens on 2182 are the machine's "
    "(tests/test_connect_errors.py checks the message)",
    "pycurator server --port 0": "a port and a pid of its own, and a Ctrl-C "
    "(tests/test_cli_server.py runs it)",
    "pycurator server": "the machine's port 2181, with a ZooKeeper on it "
    "(tests/test_cli_server.py runs it on a port of its own)",
}

Setup = Callable[[KazooClient], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def nothing(client: KazooClient) -> Iterator[None]:
    yield


@contextlib.contextmanager
def writelock_held(client: KazooClient) -> Iterator[None]:
    lock = WriteLock(client, "/locks/billing")
    assert lock.acquire(SOON)
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def mutex_held(client: KazooClient) -> Iterator[None]:
    lock = InterProcessMutex(client, "/locks/billing")
    assert lock.acquire(SOON)
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def dubbo_providers(client: KazooClient) -> Iterator[None]:
    client.create("/dubbo/lock/providers-0000000001", b"dubbo://10.0.0.7", makepath=True)
    yield


@contextlib.contextmanager
def counter_at_42(client: KazooClient) -> Iterator[None]:
    client.create("/counters/hits", b"", makepath=True)
    for value in (1, 41, 42):  # version 3
        client.set("/counters/hits", value.to_bytes(8, "big"))
    yield


def _local_ms(when: str) -> int:
    """A local time as the command prints it, in Java's milliseconds since the epoch."""
    return int(time.mktime(time.strptime(when, "%Y-%m-%d %H:%M:%S"))) * 1000


@contextlib.contextmanager
def billing_services(client: KazooClient) -> Iterator[None]:
    spec = UriSpec("{scheme}://{address}:{port}")
    with ServiceDiscovery(client, "/services") as discovery:
        for instance in (
            ServiceInstance(
                "billing",
                id="6d1e0bd1-93ab-4e8c-9c6f-5c2f2b0d8f6a",
                address="10.0.3.17",
                port=8080,
                registration_time_utc=_local_ms("2025-06-02 14:07:33"),
                uri_spec=spec,
            ),
            ServiceInstance(
                "billing",
                id="billing-7",
                address="10.0.3.18",
                port=8080,
                ssl_port=8443,
                registration_time_utc=_local_ms("2025-06-02 14:09:10"),
                uri_spec=spec,
            ),
        ):
            discovery.register_service(instance)
        client.create("/services/billing/legacy-1", b"host=10.0.3.9")  # a node that is no instance
        yield


#: What the tree holds when each transcript's command runs (the others need nothing).
SETUPS: dict[str, Setup] = {
    "pycurator lock --system menagerie /locks/billing -- ./nightly-billing.sh": writelock_held,
    "pycurator lock --system zookeeper --timeout 2 /dubbo/lock -- ./job.sh": dubbo_providers,
    "pycurator revoke /locks/billing": mutex_held,
    "pycurator inspect /counters/hits": counter_at_42,
    "pycurator services billing": billing_services,
}


def transcripts() -> list[tuple[str, list[str]]]:
    found = []
    for block in TRANSCRIPT.findall(PAGE.read_text()):
        command, *output = block.splitlines()
        found.append((command, output))
    return found


def matches(expected: str, line: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, line) is not None


def test_every_transcript_is_run_or_says_why_not() -> None:
    commands = [command for command, _ in transcripts()]
    assert len(commands) >= 7
    assert set(NOT_RUN) <= set(commands)
    assert set(SETUPS) <= set(commands)


@pytest.mark.parametrize(
    ("command", "output"),
    [t for t in transcripts() if t[0] not in NOT_RUN],
    ids=[t[0] for t in transcripts() if t[0] not in NOT_RUN],
)
def test_the_transcript_is_what_the_command_prints(
    command: str,
    output: list[str],
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    tmp_path: Path,
) -> None:
    chroot = f"/pycurator-transcripts/{uuid.uuid4().hex[:8]}"
    zk.ensure_path(chroot)
    for word in shlex.split(command):  # the scripts it names, as runnable stand-ins
        if word.startswith("./"):
            script = tmp_path / word[2:]
            script.write_text("#!/bin/sh\nexit 0\n")
            script.chmod(0o755)
    client = KazooClient(hosts=f"{zk_server.hosts}{chroot}")
    client.start(SOON)
    try:
        with SETUPS.get(command, nothing)(client):
            result = run_cli_in(tmp_path, command, f"{zk_server.hosts}{chroot}")
    finally:
        client.stop()
        client.close()
        zk.delete(chroot, recursive=True)
    printed = (result.stdout + result.stderr).splitlines()
    assert len(printed) == len(output), printed
    for expected, line in zip(output, printed, strict=True):
        assert matches(expected, line), f"\ndocumented: {expected}\nprinted:    {line}"


def run_cli_in(cwd: Path, command: str, hosts: str) -> subprocess.CompletedProcess[str]:
    """Run the transcript's command line in ``cwd`` with ``hosts`` as the ensemble."""
    return subprocess.run(
        [sys.executable, "-m", "pycurator", *shlex.split(command)[1:]],
        capture_output=True,
        text=True,
        timeout=3 * SOON,
        cwd=cwd,
        env=cli_env(PYCURATOR_ZK_HOSTS=hosts),
        stdin=subprocess.DEVNULL,
    )
