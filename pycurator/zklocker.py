"""``ZkLocker``: the lock of the Java library ZkLocker (``com.fankux.zklocker.ZkLocker``),
shared with it on the same parent, with pycurator's conventions.

Java and Python agree on who holds: the same names, data, mode, filter and order
(:mod:`pycurator._protocol.zklocker`). The Python side leaves no node behind a timeout, an error or
a cancellation, finds a create whose answer was lost again by its session's prefix (without
taking another acquire's node), follows its node while it holds (the lost notice on expiry),
and waits for its predecessor with a watch, within its deadline whatever the connection does.
"""

from __future__ import annotations

from ._threads.zklocker import JAVA_PARENT, ZkLocker

__all__ = ["JAVA_PARENT", "ZkLocker"]
