"""Rules of issue 51's recipes that a review against Curator found wrong, on plain data (the
scenarios against Java are in interop/test_scenarios_review_nodes.py): gzip that Curator's
``COMPRESSED_DATA`` reader refuses."""

from __future__ import annotations

import gzip
import io

import pytest

from pycurator import CompressedDataError
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
