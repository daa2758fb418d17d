"""JSON as Jackson 2 writes and reads it with curator-x-discovery's ``ObjectMapper`` (its
defaults, unknown properties ignored): the text it writes (compact, members in order, nulls
written, Java's numbers, its escapes: ``\\n`` and kin, other control characters as ``\\u001F``,
a character beyond 16 bits as its UTF-16 pair ``\\uD83D\\uDD12``, all else as UTF-8), and
what it accepts when it converts a JSON value to a field of a Java type (a port of ``"8080"``
or ``8080.9`` reads as 8080, a ``null`` boolean as false).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from .discovery import JAVA_BLANKS, LONG_MAX, LONG_MIN, java_double
from .errors import InstanceFormatError

_ESCAPED = re.compile(r'[\x00-\x1f"\\\U00010000-\U0010ffff]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_SHORT_ESCAPES["\r"] = "\\r"
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code > 0xFFFF:  # Jackson writes Java's two UTF-16 units, each escaped
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return _SHORT_ESCAPES.get(char) or f"\\u{code:04X}"


def _string(text: str) -> str:
    if _ESCAPED.search(text) is None:
        return '"' + text + '"'
    return '"' + _ESCAPED.sub(_escape, text) + '"'


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(("," if i else "") + _string(key) + ":")
            _write(item, out)
        out.append("}")
    else:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")


def write_json(value: Any) -> bytes:
    """``value`` (dicts, lists, str, int, float, bool, None) as the bytes Jackson writes."""
    out: list[str] = []
    _write(value, out)
    return _encoded(out)


def object_heads(*keys: str) -> tuple[str, ...]:
    """What precedes each value in the text of an object of members ``keys``, in order (for
    :func:`write_object`)."""
    return tuple(("," if i else "{") + _string(key) + ":" for i, key in enumerate(keys))


def write_object(heads: tuple[str, ...], values: Iterable[Any]) -> bytes:
    """The object of the members whose keys gave ``heads`` (:func:`object_heads`) and whose
    values are ``values``, as :func:`write_json` writes the dict of them."""
    out: list[str] = []
    for head, value in zip(heads, values, strict=True):
        out.append(head)
        _write(value, out)
    out.append("}")
    return _encoded(out)


def _encoded(out: list[str]) -> bytes:
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not text Java can write: a lone surrogate at {exc.start}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_SPACE = re.compile(r"[ \t\n\r]*")


def read_json(data: bytes) -> Any:
    """The first JSON value in ``data``, as Jackson reads it: UTF-8, -16 or -32 (a byte-order
    mark allowed), leading white space skipped, anything after the value ignored; no ``NaN``,
    no comments. :class:`InstanceFormatError` naming the problem otherwise."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"a service instance is read from bytes, not {type(data).__name__}")
    raw = bytes(data)
    if not raw.strip(b" \t\n\r"):
        raise InstanceFormatError("no content (empty data)")
    try:
        text = raw.decode(json.detect_encoding(raw))
    except UnicodeDecodeError as exc:
        raise InstanceFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        return _DECODER.raw_decode(text, _SPACE.match(text).end())[0]  # type: ignore[union-attr]
    except json.JSONDecodeError as exc:
        raise InstanceFormatError(f"invalid JSON: {exc.msg} at {exc.pos}") from None
    except ValueError as exc:
        raise InstanceFormatError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise InstanceFormatError("invalid JSON: nested too deep") from None


def kind_of(value: object) -> str:
    """A JSON value's kind, as an error names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else "an array"


def to_str(name: str, value: object) -> str | None:
    """A Java ``String`` field: a number or boolean as its JSON text (a fraction as Java
    writes it: Jackson keeps the text, ``1.50``, where this writes ``1.5``); null stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value) if isinstance(value, int) else java_double(value)
    raise InstanceFormatError(f"{name}: cannot read a string from {kind_of(value)}")


def to_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int | None:
    """A Java ``Integer`` (or, given ``low`` and ``high``, a ``Long``) field: a number (a
    fraction cut off), a string of digits (trimmed; empty is null), or null (None)."""
    low, high = (-(2**31), 2**31 - 1) if low is None or high is None else (low, high)
    number: int | None
    if value is None:
        return None
    if isinstance(value, (bool, dict, list)):
        raise InstanceFormatError(f"{name}: cannot read a number from {kind_of(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InstanceFormatError(f"{name}: {value!r} is out of range")
        number = math.trunc(value)
    elif isinstance(value, str):
        text = value.strip(JAVA_BLANKS)
        if text in ("", "null"):
            return None
        if not _JAVA_INTEGER.fullmatch(text):
            raise InstanceFormatError(f"{name}: {value!r} is not a whole number")
        number = int(text)
    else:
        number = int(value)  # type: ignore[call-overload]
    if not low <= number <= high:
        raise InstanceFormatError(f"{name}: {number} is out of range ({low} - {high})")
    return number


def to_long(name: str, value: object) -> int:
    """A Java ``long`` field: as :func:`to_int`, null and an empty string being 0."""
    number = to_int(name, value, LONG_MIN, LONG_MAX)
    return 0 if number is None else number


def to_boolean(name: str, value: object) -> bool:
    """A Java ``boolean`` field: a boolean, a number (0 is false), ``"true"``, ``"True"`` or
    ``"TRUE"`` (and so false), an empty string or null (false)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        text = value.strip(JAVA_BLANKS)
        if text in ("true", "True", "TRUE"):
            return True
        if text in ("false", "False", "FALSE", "", "null"):
            return False
        raise InstanceFormatError(f"{name}: {value!r} is not true or false")
    raise InstanceFormatError(f"{name}: cannot read a boolean from {kind_of(value)}")
