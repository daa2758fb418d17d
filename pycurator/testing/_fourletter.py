"""ZooKeeper's four-letter words: ``ruok``, ``srvr``, ``mntr``, ``dump``, ``cons``, ``wchc``..."""

from __future__ import annotations

import socket
import time


def four_letter_word(host: str, port: int, cmd: str, timeout: float = 5.0) -> str:
    """Send ``cmd`` to the server and return its whole answer as text.

    Raises ``OSError`` when the server cannot be reached within ``timeout`` seconds.
    """
    if len(cmd) != 4:
        raise ValueError(f"a four-letter word has four letters, not {cmd!r}")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(cmd.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def split_hosts(hosts: str) -> list[tuple[str, int]]:
    """``"h1:2181,h2:2182/chroot"`` as ``[("h1", 2181), ("h2", 2182)]``."""
    result = []
    for entry in hosts.split("/", 1)[0].split(","):
        host, _, port = entry.strip().rpartition(":")
        result.append((host.strip("[]") or "127.0.0.1", int(port or 2181)))
    return result


def paths_by_session(text: str) -> dict[str, list[str]]:
    """A list of paths by session, as ``wchc`` prints it (and ``dump`` its ephemeral nodes): a
    session id line (``0x..``), then its paths indented, one a line."""
    sessions: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("0x"):
            current = sessions.setdefault(line.strip().rstrip(":"), [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return sessions


def parse_dump(text: str) -> dict[str, list[str]]:
    """The ephemeral nodes in a ``dump`` answer, by session id as the server writes it."""
    _, found, rest = text.partition("Sessions with Ephemerals")
    section = rest.split("Connections dump", 1)[0].split("\n", 1)[-1] if found else ""
    return paths_by_session(section)


def ephemerals_by_session(hosts: str, under: str = "/") -> dict[str, list[str]]:
    """Every ephemeral node at or below ``under`` that the servers of ``hosts`` hold, by the
    session that owns it (``dump``; the answers of every member that replies are merged).

    An audit after a scenario: a lock node that is still there belongs to a live session, so
    when no one holds or waits, the answer must be empty.
    """
    prefix = under.rstrip("/") + "/"
    merged: dict[str, set[str]] = {}
    for host, port in split_hosts(hosts):
        try:
            answer = four_letter_word(host, port, "dump")
        except OSError:
            continue
        for session, paths in parse_dump(answer).items():
            mine = {path for path in paths if path == under or path.startswith(prefix)}
            if mine:
                merged.setdefault(session, set()).update(mine)
    return {session: sorted(paths) for session, paths in sorted(merged.items())}


def assert_no_ephemerals(hosts: str, under: str, wait: float = 30.0) -> None:
    """Raise AssertionError naming them if ephemeral nodes under ``under`` are still there
    after ``wait`` seconds (sessions of killed processes end only with their timeout)."""
    end = time.monotonic() + wait
    while (left := ephemerals_by_session(hosts, under)) and time.monotonic() < end:
        time.sleep(0.1)
    if left:
        raise AssertionError(f"ephemeral nodes left under {under}, by session: {left}")
