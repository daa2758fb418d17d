"""What scenarios watch from the test's thread: nodes on the server, and calls made to
callbacks on whatever thread or loop the front end runs them."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from ..support import SOON, children


def nodes(client: KazooClient, parents: Sequence[str]) -> list[str]:
    """Every child of ``parents`` (none for a parent that is gone)."""
    return [f"{parent}/{name}" for parent in parents for name in children(client, parent)]


class Calls:
    """A record of calls (``on_lost`` callbacks, latch listeners), waited on with a bound."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self._changed = threading.Condition()

    def add(self, item: Any) -> None:
        with self._changed:
            self.seen.append(item)
            self._changed.notify_all()

    def on_lost(self, _recipe: Any, reason: str) -> None:
        """An ``on_lost`` callback: notes the reason."""
        self.add(reason)

    def is_leader(self) -> None:
        """A latch listener's half: notes ``is_leader``."""
        self.add("is_leader")

    def not_leader(self) -> None:
        """A latch listener's other half: notes ``not_leader``."""
        self.add("not_leader")

    def wait_for(self, count: int, timeout: float = SOON) -> list[Any]:
        """The calls once there are ``count`` of them; AssertionError after ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.seen) >= count, timeout):
                raise AssertionError(f"{count} calls expected within {timeout}s: {self.seen}")
            return list(self.seen)
