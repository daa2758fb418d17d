"""Two rules of the nodes' recipes, on plain data, as Curator keeps them (the scenarios against
Java are in interop/test_nodes_scenarios_edges.py): gzip that Curator's ``COMPRESSED_DATA``
reader refuses, and a member id read from a path that is none."""

from __future__ import annotations

import gzip
import io

import pytest
from kazoo.client import KazooClient

from pycurator import CompressedDataError, GroupMember, aio
from pycurator._protocol.cache import compress, decompress


@pytest.mark.parametrize(
    "written",
    [
        compress(b"one") + b"junk",
        compress(b"one") + compress(b"two"),
        gzip.compress(b"one") + b"\x00",
    ],
    ids=["bytes after it", "two members", "a padding byte"],
)
def test_gzip_with_anything_after_its_one_member_does_not_unzip_as_in_curator(
    written: bytes,
) -> None:
    """Curator's reader takes one gzip member and nothing after it ("Expected just one GZip
    block, without garbage in the end"): a cache of Curator's leaves such a node out, and so
    must ours, naming it (Python's ``gzip.decompress`` would read every member)."""
    with pytest.raises(CompressedDataError, match="/n: more than one gzip member") as raised:
        decompress("/n", written)
    assert raised.value.path == "/n"


def test_gzip_with_header_fields_curator_skips_unzips() -> None:
    out = io.BytesIO()
    with gzip.GzipFile(filename="name.txt", mode="wb", fileobj=out, mtime=1_700_000_000) as file:
        file.write(b"named")
    assert decompress("/n", out.getvalue()) == b"named"
    assert decompress("/n", compress(b"")) == b""


@pytest.mark.parametrize(
    ("path", "words"),
    [("m1", "Path must start with / character: 'm1'"), ("/g/", "must not end with / char")],
)
def test_a_member_id_is_read_only_from_a_path_as_curator_reads_it(path: str, words: str) -> None:
    """``id_from_path`` is Curator's ``ZKPaths.getNodeFromPath``, which validates the path:
    a path that is none is refused by name, not read as an id."""
    client = KazooClient()  # never started: nothing is sent
    for member in (GroupMember(client, "/g", "me"), aio.GroupMember(client, "/g", "me")):
        assert member.id_from_path("/g/m1") == "m1"
        assert member.id_from_path("/") == ""
        with pytest.raises(ValueError, match=words):
            member.id_from_path(path)
