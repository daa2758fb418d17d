"""Checks of the arguments every recipe takes: timeout, node data, time to live, connection
policy (the
client's own check is the transport's, :func:`pycurator._client.transport.check_client`).

Each raises ``TypeError`` or ``ValueError`` naming the argument, before any request is sent.
"""

from __future__ import annotations

import math
from typing import Literal

#: A timeout of this many seconds (about 32 years) or more, ``math.inf`` included, waits
#: without limit: the clocks and the waits of threads, greenlets and event loops overflow
#: somewhere beyond it.
UNLIMITED_TIMEOUT = 1e9
#: The longest session timeout ZooKeeper's protocol can carry, in whole seconds (it sends
#: milliseconds as a 32-bit integer; a server grants at most its own maximum anyway).
MAX_SESSION_TIMEOUT = 2_147_483.0

#: The longest time to live ZooKeeper takes for a node, in milliseconds
#: (``EphemeralType.TTL.maxValue()``: 40 bits, about 34 years).
MAX_TTL_MS = (1 << 40) - 1

ConnectionPolicy = Literal["standard", "session"]
CONNECTION_POLICIES: tuple[ConnectionPolicy, ...] = ("standard", "session")


def check_timeout(timeout: float | None) -> float | None:
    """A user's timeout in seconds: None (no limit) or a number >= 0; a huge or infinite one
    (>= :data:`UNLIMITED_TIMEOUT`) is None too."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, not {timeout!r}")
    if math.isnan(timeout) or timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, not {timeout!r}")
    if timeout >= UNLIMITED_TIMEOUT:
        return None
    return float(timeout)


def check_data(data: bytes | None, name: str = "node_data") -> None:
    """Raise TypeError naming ``name`` unless ``data`` is None or bytes."""
    if data is not None and not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes, not {type(data).__name__}")


def ttl_millis(ttl: object, name: str = "ttl") -> int:
    """A time to live given in seconds, as ZooKeeper takes it: whole milliseconds, at least one
    and at most :data:`MAX_TTL_MS`; ``TypeError`` or ``ValueError`` naming ``name`` otherwise."""
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {ttl!r}")
    millis = round(ttl * 1000) if math.isfinite(ttl) else 0
    if not 1 <= millis <= MAX_TTL_MS:
        raise ValueError(
            f"{name} must be at least a millisecond and at most {MAX_TTL_MS} ms (in seconds): "
            f"not {ttl!r}"
        )
    return int(millis)


def check_policy(policy: str) -> ConnectionPolicy:
    """Validate a connection policy name (see :mod:`pycurator._recipes.hold_monitor`)."""
    if policy == "standard":
        return "standard"
    if policy == "session":
        return "session"
    raise ValueError(f"connection_policy must be 'standard' or 'session', not {policy!r}")


__all__ = [
    "CONNECTION_POLICIES",
    "MAX_SESSION_TIMEOUT",
    "MAX_TTL_MS",
    "UNLIMITED_TIMEOUT",
    "ConnectionPolicy",
    "check_data",
    "check_policy",
    "check_timeout",
    "ttl_millis",
]
