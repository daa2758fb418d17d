"""Leaders that die: leadership passes to the next latch in queue order, across languages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import LeaderLatch, Participant
from pycurator.testing import ClientFactory, JavaLatch, WorkerProcess
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON, children, delete_when_empty, eventually

#: After each scenario, no latch node is left in the server's dump of ephemerals by session.
pytestmark = pytest.mark.usefixtures("no_orphans")

#: The killed leader's session timeout: its node goes this long after the SIGKILL.
WORKER_SESSION_MS = 2000


def queue_length_is(client: KazooClient, path: str, n: int) -> Callable[[], bool]:
    return lambda: len(children(client, path)) == n


@pytest.mark.parametrize("language", ["python", "java"])
def test_a_leader_killed_with_sigkill_hands_leadership_to_the_next_in_queue(
    language: str,
    zk_server: ZooKeeperTarget,
    curator: Any,
    zk_client_factory: ClientFactory,
    zk_path: str,
) -> None:
    """The queue is: the killed leader (``language``, a process of its own), a latch of the
    other language, then one of ``language``: the second, not the third, leads next."""
    path = f"{zk_path}/latch"
    observer = zk_client_factory()
    # a plain parent: Curator's latch (5.4 to 5.9) gives up a create whose container parent
    # was reaped
    observer.ensure_path(path)
    other = "java" if language == "python" else "python"
    latches: dict[str, LeaderLatch | JavaLatch] = {}
    worker = WorkerProcess.hold(
        language, "latch", zk_server.hosts, path, session_ms=WORKER_SESSION_MS
    )
    try:
        assert worker.wait_for("held", timeout=60)["event"] == "held"
        for n, lang in enumerate((other, language), start=2):
            latch_id = f"{lang}-{n}"
            if lang == "java":
                latches[lang] = JavaLatch(curator, path, latch_id)
            else:
                latches[lang] = LeaderLatch(zk_client_factory(), path, latch_id)
            latches[lang].start()
            eventually(queue_length_is(observer, path, n), what=f"{latch_id} queued")
        assert latches[other].participants() == [
            Participant(f"{language}-worker", True),
            Participant(f"{other}-2", False),
            Participant(f"{language}-3", False),
        ]
        worker.kill()
        assert latches[other].wait(timeout=3 * SOON)  # once the dead leader's session times out
        assert not latches[language].has_leadership()
        expected = [Participant(f"{other}-2", True), Participant(f"{language}-3", False)]
        for latch in latches.values():
            assert latch.participants() == expected
    finally:
        worker.kill()
        worker.finish()
        for latch in latches.values():
            latch.close()
    delete_when_empty(observer, path)  # every latch node gone
