"""The two front ends behind one handle: their recipes' module, their participants, their
clients, and a ``lead`` for their leader selectors that scenarios drive the same way."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, Literal

from kazoo.client import KazooClient

import pycurator
from pycurator.testing import ClientFactory

from ..support import SOON
from .actors import Actor, LoopThread, TaskUnit, ThreadUnit, Unit

FrontName = Literal["threads", "asyncio"]
FRONTS: list[FrontName] = ["threads", "asyncio"]


class Front:
    """One front end for one test: ``pycurator`` run from threads, or ``pycurator.aio`` run
    from tasks on one event loop (in a thread of its own)."""

    def __init__(self, name: FrontName, clients: ClientFactory) -> None:
        self.name = name
        self.module: ModuleType = pycurator.aio if name == "asyncio" else pycurator
        self._clients = clients
        self._made: list[KazooClient] = []
        self._units: list[Unit] = []
        self._loop = LoopThread() if name == "asyncio" else None

    def __repr__(self) -> str:
        return self.name

    def client(self, **kwargs: Any) -> KazooClient:
        """A started kazoo client on the test server, stopped at the end of the test."""
        client = self._clients(**kwargs)
        self._made.append(client)
        return client

    def actor(self, target: Any, name: str = "") -> Actor:
        """A participant acting on ``target`` from a thread, or a task, of its own."""
        name = name or f"participant {len(self._units) + 1}"
        unit: Unit = TaskUnit(self._loop.loop) if self._loop is not None else ThreadUnit(name)
        self._units.append(unit)
        return Actor(unit, target, name)

    def make(self, recipe: str, *args: Any, **kwargs: Any) -> Any:
        """``recipe``'s object of this front end (``make("InterProcessMutex", client, path)``)."""
        return getattr(self.module, recipe)(*args, **kwargs)

    def lead(self, *, raises: int = 0) -> Lead:
        """A ``lead`` for this front end's selector whose first ``raises`` terms raise at
        once (see :class:`Lead`)."""
        return Lead(self, raises=raises)

    def close(self) -> None:
        """Stop the clients (which ends any wait left), then the participants and the loop;
        AssertionError when a participant was still busy."""
        for client in self._made:
            client.stop()
        busy = [unit for unit in self._units if not unit.close()]
        if self._loop is not None:
            self._loop.close()
        assert busy == [], f"{len(busy)} participants still busy at the end"


class Term:
    """One call of a :class:`Lead`: the leadership it got, and how it ended: ``returned``
    (told to), ``raised``, ``lost`` (a thread saw its lost_event and returned) or
    ``cancelled`` (a task cancelled at the term's end)."""

    def __init__(self, leadership: Any) -> None:
        self.leadership = leadership
        self.ended = threading.Event()
        self.how = ""
        self._asked = threading.Event()
        self._wake: Callable[[], None] | None = None

    def give_up(self) -> None:
        """Tell ``lead`` to return."""
        self._asked.set()
        if self._wake is not None:
            self._wake()

    def _finish(self, how: str) -> None:
        self.how = how
        self.ended.set()


class Lead:
    """A selector's ``lead`` that scenarios drive alike on both front ends: it leads until told
    to return (:meth:`Term.give_up`) or its term ends; its first ``raises`` terms raise at once.

    The threaded one is a function that watches ``leadership.lost_event`` (a thread cannot be
    interrupted); the asyncio one is a coroutine function, cancelled at the term's end."""

    def __init__(self, front: Front, *, raises: int) -> None:
        self.front = front
        self.raises = raises
        self.terms: list[Term] = []
        self._changed = threading.Condition()

    @property
    def function(self) -> Callable[[Any], Any]:
        """The ``lead`` to give the front end's selector."""
        return self._coroutine if self.front.name == "asyncio" else self._threaded

    def term(self, number: int, timeout: float = SOON) -> Term:
        """The ``number``-th term (1 for the first), once it has begun."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.terms) >= number, timeout):
                raise AssertionError(f"term {number} not begun within {timeout}s")
            return self.terms[number - 1]

    def _begin(self, leadership: Any) -> Term:
        term = Term(leadership)
        with self._changed:
            self.terms.append(term)
            self._changed.notify_all()
        return term

    def _threaded(self, leadership: Any) -> None:
        term = self._begin(leadership)
        if len(self.terms) <= self.raises:
            term._finish("raised")
            raise RuntimeError("lead failed")
        while not term._asked.is_set() and not leadership.lost_event.is_set():
            term._asked.wait(0.02)  # the term's end is an event of its own
        term._finish("returned" if term._asked.is_set() else "lost")

    async def _coroutine(self, leadership: Any) -> None:
        term = self._begin(leadership)
        if len(self.terms) <= self.raises:
            term._finish("raised")
            raise RuntimeError("lead failed")
        asked = asyncio.Event()
        loop = asyncio.get_running_loop()

        def wake() -> None:
            loop.call_soon_threadsafe(asked.set)

        term._wake = wake
        if term._asked.is_set():
            asked.set()
        try:
            await asked.wait()
        except asyncio.CancelledError:
            term._finish("cancelled")
            raise
        term._finish("returned")
