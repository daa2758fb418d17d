"""Curator's names and sort order as pure functions, over names as Java Curator writes them."""

from __future__ import annotations

import os
import re
import uuid

from pycurator._protocol import wire

JAVA_LOCK = "_c_0b6e4b9e-3b53-4b2c-9c3e-6f0e6cbe2f11-lock-0000000007"
JAVA_LOCK_EARLIER = "_c_ffffffff-3b53-4b2c-9c3e-6f0e6cbe2f11-lock-0000000003"


def test_protected_prefix_has_curators_shape_and_length() -> None:
    pid = wire.new_protected_id()
    prefix = wire.protected_prefix(pid)
    assert re.fullmatch(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-", prefix)
    assert len(prefix) == wire.PROTECTED_PREFIX_WITH_UUID_LENGTH == 40


def test_protected_id_is_read_back_from_a_java_name() -> None:
    assert wire.protected_id(JAVA_LOCK) == "0b6e4b9e-3b53-4b2c-9c3e-6f0e6cbe2f11"
    assert wire.strip_protection(JAVA_LOCK) == "lock-0000000007"


def test_names_without_protection_have_no_protected_id() -> None:
    assert wire.protected_id("lock-0000000001") is None
    assert wire.protected_id("_c_short-lock-1") is None
    assert wire.strip_protection("lock-0000000001") == "lock-0000000001"


def test_sort_key_is_the_part_after_the_last_token() -> None:
    assert wire.sort_key(JAVA_LOCK, "lock-") == "0000000007"
    # the token also occurs inside the prefix: the LAST occurrence counts
    assert wire.sort_key("_c_x-lock-y-lock-0000000002", "lock-") == "0000000002"


def test_name_without_the_token_sorts_by_its_whole_name() -> None:
    assert wire.sort_key("foreign", "lock-") == "foreign"


def test_children_sort_by_sequence_whatever_the_uuid() -> None:
    children = [JAVA_LOCK, "zzz-foreign", JAVA_LOCK_EARLIER, "_c_1-lock-0000000005"]
    assert wire.sort_children(children, "lock-") == [
        JAVA_LOCK_EARLIER,
        "_c_1-lock-0000000005",
        JAVA_LOCK,
        "zzz-foreign",
    ]


def test_sort_is_stable_for_equal_keys() -> None:
    a, b = "_c_a-lock-0000000001", "_c_b-lock-0000000001"
    assert wire.sort_children([b, a], "lock-") == [b, a]


def test_read_write_sort_strips_read_then_write_token() -> None:
    write = "_c_0b6e4b9e-3b53-4b2c-9c3e-6f0e6cbe2f11-__WRIT__0000000004"
    read = "_c_0b6e4b9e-3b53-4b2c-9c3e-6f0e6cbe2f12-__READ__0000000003"
    assert wire.sort_key(write, "__READ__", "__WRIT__") == "0000000004"
    assert wire.sort_key(read, "__READ__", "__WRIT__") == "0000000003"


def test_join_path_and_node_name() -> None:
    assert wire.join_path("/", "a") == "/a"
    assert wire.join_path("/a/b", "c") == "/a/b/c"
    assert wire.node_name("/a/b/c") == "c"
    assert wire.full_paths("/p", ["x", "y"]) == ["/p/x", "/p/y"]


def test_revoke_message_is_curators_ten_bytes() -> None:
    assert wire.REVOKE_MESSAGE == b"__REVOKE__"
    assert len(wire.REVOKE_MESSAGE) == 10


def test_protected_ids_are_version_4_uuids_and_differ_in_a_forked_child() -> None:
    ids = {wire.new_protected_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert {uuid.UUID(i).version for i in ids} == {4}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id must not be the parent's next one
        os.write(write, wire.new_protected_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert child != wire.new_protected_id()
