"""Reading a server's transaction log: the create modes a client's stat cannot show, from
entries written as ZooKeeper writes them (jute, big-endian), and from a real server."""

from __future__ import annotations

import struct
from pathlib import Path

from pycurator.testing import Creation, ZooKeeperServer, created_modes, creations
from pycurator.testing._txnlog import (
    CREATE,
    CREATE2,
    CREATE_CONTAINER,
    CREATE_TTL,
    LOG_MAGIC,
    MULTI,
)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def _create(kind: int, path: str, *, ephemeral: bool = False, ttl_ms: int = 0) -> bytes:
    """A create txn's record: path, data, one ACL (world:anyone), then what its kind adds."""
    record = _string(path) + struct.pack(">i", 3) + b"abc"
    record += struct.pack(">i", 1) + struct.pack(">i", 31) + _string("world") + _string("anyone")
    if kind in (CREATE, CREATE2):
        return record + bytes([ephemeral]) + struct.pack(">i", 0)
    if kind == CREATE_TTL:
        return record + struct.pack(">iq", 0, ttl_ms)
    return record + struct.pack(">i", 0)


def _entry(kind: int, zxid: int, record: bytes) -> bytes:
    body = struct.pack(">qiqqi", 0x100, 1, zxid, 0, kind) + record
    return struct.pack(">qi", 0, len(body)) + body + b"B"


def _log(folder: Path, *entries: bytes, name: str = "log.1") -> None:
    (folder / "version-2").mkdir(exist_ok=True)
    header = struct.pack(">4siq", LOG_MAGIC, 2, 0)
    (folder / "version-2" / name).write_bytes(header + b"".join(entries) + bytes(64))


def test_each_create_kind_is_read_with_its_mode_and_ttl(tmp_path: Path) -> None:
    inner = [
        (CREATE, _create(CREATE, "/m/a")),
        (CREATE_TTL, _create(CREATE_TTL, "/m/t", ttl_ms=1500)),
    ]
    multi = struct.pack(">i", len(inner)) + b"".join(
        struct.pack(">ii", kind, len(record)) + record for kind, record in inner
    )
    _log(
        tmp_path,
        _entry(CREATE2, 2, _create(CREATE2, "/p")),
        _entry(CREATE, 3, _create(CREATE, "/e", ephemeral=True)),
        _entry(CREATE_CONTAINER, 4, _create(CREATE_CONTAINER, "/c")),
        _entry(2, 5, _string("/p")),  # a delete: not a creation
        _entry(CREATE_TTL, 6, _create(CREATE_TTL, "/t", ttl_ms=2000)),
        _entry(MULTI, 7, multi),
    )
    assert creations(tmp_path) == [
        Creation("/p", "PERSISTENT", None, 2),
        Creation("/e", "EPHEMERAL", None, 3),
        Creation("/c", "CONTAINER", None, 4),
        Creation("/t", "PERSISTENT_WITH_TTL", 2.0, 6),
        Creation("/m/a", "PERSISTENT", None, 7),
        Creation("/m/t", "PERSISTENT_WITH_TTL", 1.5, 7),
    ]
    assert set(created_modes(tmp_path, "/m")) == {"/m/a", "/m/t"}


def test_logs_are_read_in_zxid_order_and_a_torn_tail_ends_one(tmp_path: Path) -> None:
    _log(tmp_path, _entry(CREATE, 0x20, _create(CREATE, "/later")), name="log.20")
    torn = _entry(CREATE, 3, _create(CREATE, "/torn"))[:-9]
    _log(tmp_path, _entry(CREATE, 2, _create(CREATE, "/first")), torn, name="log.2")
    assert [c.path for c in creations(tmp_path)] == ["/first", "/later"]
    assert creations(tmp_path / "nothing-here") == []


def test_a_real_servers_log_names_the_nodes_a_client_made() -> None:
    from kazoo.client import KazooClient

    with ZooKeeperServer() as server:
        client = KazooClient(server.hosts)
        client.start(timeout=30)
        try:
            client.create("/a/b", b"x", makepath=True)
            client.create("/a/e", ephemeral=True)
        finally:
            client.stop()
            client.close()
        modes = created_modes(server.data_dir, "/a")
    assert {path: c.mode for path, c in modes.items()} == {
        "/a": "PERSISTENT",
        "/a/b": "PERSISTENT",
        "/a/e": "EPHEMERAL",
    }
