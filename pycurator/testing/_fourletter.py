"""ZooKeeper's four-letter words: ``ruok``, ``srvr``, ``mntr``, ``dump``, ``cons``, ``wchc``..."""

from __future__ import annotations

import socket


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
