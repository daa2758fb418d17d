"""What the command prints of the tree: node names and data, shown so that no byte written to a
lock node can drive the operator's terminal.

Anyone who may create or write a lock node chooses those bytes. Escape sequences (``ESC [``),
bells, carriage returns, bidirectional overrides and other characters that are not printable are
shown as Python escapes (``\\x1b``, ``\\u202e``), a backslash as ``\\\\``, and bytes that are not
UTF-8 as ``\\xNN``; error messages, whose parts are often a ``repr`` already, keep their
backslashes. ``--json`` needs none of this: JSON escapes them itself, exactly.
"""

from __future__ import annotations


def shown(text: str, backslash: bool = True) -> str:
    """``text`` with every character that is not printable, and the backslash, escaped; a
    message whose parts are already escaped (``repr`` in it) keeps its backslashes with
    ``backslash=False``."""
    if text.isprintable() and (not backslash or "\\" not in text):
        return text
    out = []
    for char in text:
        if char == "\\" and backslash:
            out.append("\\\\")
        elif char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            if code <= 0xFF:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    return "".join(out)


def shown_data(data: bytes, width: int | None = None) -> str:
    """Node data as text to print: UTF-8 where it is, ``\\xNN`` for each byte where it is not,
    and what :func:`shown` escapes, escaped. With ``width``, at most that many characters: a
    longer text ends with ``…`` after the last whole character or escape that fits."""
    text = data.decode("utf-8", "surrogateescape")
    out = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(shown(char))
    if width is None or sum(map(len, out)) <= width:
        return "".join(out)
    kept, used = [], 0
    for piece in out:  # an escape is cut whole, never in half
        if used + len(piece) > width - 1:
            break
        kept.append(piece)
        used += len(piece)
    return "".join(kept) + "…"


__all__ = ["shown", "shown_data"]
