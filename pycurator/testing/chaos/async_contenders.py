"""The chaos run's asyncio contenders: pycurator's asyncio recipes (:mod:`pycurator.aio`), each
on a loop of its own in the contender's thread, taking and fencing holds as the threaded ones
do (:mod:`pycurator.testing.chaos.contenders`)."""

from __future__ import annotations

import asyncio

from pycurator import aio

from .contenders import PythonContender
from .history import MUTEX, RW, SEMAPHORE, SEMAPHORE_MAX


class AsyncContender(PythonContender):
    """pycurator's asyncio recipes (:mod:`pycurator.aio`) on a loop of the contender's own, in
    its thread: one task takes the lock again and again (an asyncio lock is held per task);
    the gate, the fence and the client's start run on worker threads, so that the loop goes on
    serving the recipes' background work meanwhile. Kinds: :data:`ASYNC_KINDS`."""

    language = "asyncio"

    def run(self) -> None:
        if self.kind not in ASYNC_KINDS:
            raise ValueError(f"no asyncio contender of kind {self.kind!r}; choose {ASYNC_KINDS}")
        asyncio.run(self._run())

    async def _run(self) -> None:
        try:
            await asyncio.to_thread(self.start_client)
            self.connect()
            self.running = True
            while not self.stop.is_set():
                await asyncio.to_thread(self.gate.pass_through, self.who, self.stop)
                if self.stop.is_set():
                    break
                try:
                    await self._cycle()
                except Exception as exc:  # a fault surfaced in acquire or release: go on
                    self.errors[type(exc).__name__] += 1
                    await asyncio.sleep(0.05)
        finally:
            self.running = False
            await asyncio.to_thread(self.close)

    def connect(self) -> None:
        """The recipes, on the loop (the client is started)."""
        if self.kind == "mutex":
            self.mutex = aio.InterProcessMutex(self.client, MUTEX)
        elif self.kind == "lease":
            self.leases = aio.InterProcessSemaphoreV2(self.client, SEMAPHORE, SEMAPHORE_MAX)
        else:
            rw = aio.InterProcessReadWriteLock(self.client, RW)
            self.mutex = rw.write_lock() if self.kind == "write" else rw.read_lock()

    async def _cycle(self) -> None:
        if self.kind == "lease":
            self.lease = await self.leases.acquire(timeout=2)
            held = None if self.lease is None else (self.lease.path, self.lease.fencing_token)
        elif await self.mutex.acquire(timeout=2):
            held = self.mutex.lock_path, self.mutex.fencing_token
        else:
            held = None
        if held is None:
            return
        hold = self.entered(held)
        try:
            await asyncio.sleep(self.hold_time())
            await asyncio.to_thread(self.fence, hold)
        finally:
            self.left(hold)
            await (self.lease.close() if self.kind == "lease" else self.mutex.release())


#: The kinds of :class:`AsyncContender`: the locks of the run that pycurator's asyncio recipes
#: take (the elections and the other systems' locks stay threaded).
ASYNC_KINDS = ("mutex", "write", "read", "lease")


__all__ = ["ASYNC_KINDS", "AsyncContender"]
