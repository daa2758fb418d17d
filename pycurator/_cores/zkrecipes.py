"""The election core of ZooKeeper's ``LeaderElectionSupport`` (its rules are
:mod:`pycurator._protocol.zkrecipes`, its engines :mod:`pycurator._recipes.zkrecipes`), which both
front ends compose."""

from __future__ import annotations

from .._protocol.transport import Transport
from .._protocol.zkrecipes import ELECTION_DRIVER, ELECTION_NAMING, check_host_name
from .latch import CloseMode, LatchCore


def election_core(transport: Transport, root: str, host_name: str) -> LatchCore:
    """The core of a ``LeaderElectionSupport`` participant: a latch core whose offers are
    ``ROOT/n_<seq>`` holding ``host_name`` (UTF-8): shared by both front ends."""
    return LatchCore(
        transport,
        root,
        check_host_name(host_name),
        CloseMode.SILENT,
        None,
        "standard",
        driver=ELECTION_DRIVER,
        naming=ELECTION_NAMING,
    )


__all__ = ["election_core"]
