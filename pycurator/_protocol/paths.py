"""Curator's ``PathUtils.validatePath``: the same path string is accepted or rejected alike."""

from __future__ import annotations

import re
import struct

#: Paths the checks below accept at once: segments of printable ASCII but ``/`` (no control
#: character, none of the ranges :func:`_is_invalid_code_unit` rejects, no empty segment, no
#: trailing ``/``), when no segment starts with ``.`` (``.`` and ``..`` are rejected).
_PLAIN = re.compile(r"(?:/[ -.0-~]+)+")


def _is_invalid_code_unit(c: int) -> bool:
    return 0x00 < c <= 0x1F or 0x7F <= c <= 0x9F or 0xD800 <= c <= 0xF8FF or 0xFFF0 <= c <= 0xFFFF


def validate_path(path: str) -> str:
    """Return ``path`` if ZooKeeper (and Curator) accept it, else raise ``ValueError``.

    Positions in messages count UTF-16 code units, as Java's do, so a character outside the Basic
    Multilingual Plane (a surrogate pair) is rejected like any other invalid character.
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    if _PLAIN.fullmatch(path) is not None and "/." not in path:
        return path  # the common case, without a look at each character
    if not path:
        raise ValueError("Path length must be > 0")
    if path[0] != "/":
        raise ValueError(f"Path must start with / character: {path!r}")
    if len(path) == 1:
        return path
    if path[-1] == "/":
        raise ValueError(f"Path must not end with / character: {path!r}")
    raw = path.encode("utf-16-le", "surrogatepass")
    units = struct.unpack(f"<{len(raw) // 2}H", raw)
    length = len(units)
    slash, dot = ord("/"), ord(".")
    for i in range(1, length):
        c, last = units[i], units[i - 1]
        following_ends_segment = i + 1 == length or units[i + 1] == slash
        if c == 0:
            reason = "null character not allowed"
        elif c == slash and last == slash:
            reason = "empty node name specified"
        elif (
            c == dot
            and following_ends_segment
            and (last == slash or (last == dot and units[i - 2] == slash))
        ):
            reason = "relative paths not allowed"
        elif _is_invalid_code_unit(c):
            reason = "invalid character"
        else:
            continue
        raise ValueError(f"Invalid path string {path!r} caused by {reason} @{i}")
    return path
