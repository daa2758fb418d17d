"""How a request's record is queued on a kazoo client: the server's path of a client's path, the
record queued on kazoo's connection, the client's ACL, and a server's refusal told as the
feature it lacks. What :mod:`pycurator._client.sending` and
:mod:`pycurator._client.persistent_watches` send with."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import UnimplementedError
from kazoo.security import OPEN_ACL_UNSAFE

from .._protocol.errors import ServerFeatureError
from .._protocol.steps import link_inline, outcome
from . import kazoo_internals

#: Whether this kazoo can read the server's answer to a removeWatches for a watch that is gone
#: (``NoWatcherError``, kazoo 2.11.0 on): an older kazoo (below the package's floor, installed
#: anyway) ends its connection loop on it, so there the request is not sent.
CAN_REMOVE_WATCHES = kazoo_internals.reads_error(kazoo_internals.NO_WATCHER)


def prefixed(client: KazooClient, path: str) -> str:
    """The server's path of ``client``'s ``path`` (its chroot prepended)."""
    chroot: str = client.chroot or ""
    return chroot + path if path != "/" or not chroot else chroot


def is_plain(path: str) -> bool:
    """Whether ``path`` is one kazoo's path normalization leaves as it is (absolute, no empty
    segment, no trailing ``/``, no segment starting with ``.``): :func:`prefixed` is then the
    server's path, as kazoo's ``*_async`` calls make it."""
    return (
        path[:1] == "/"
        and "//" not in path
        and "/." not in path
        and (path[-1] != "/" or path == "/")
    )


def sent(client: KazooClient, record: Any) -> Any:
    """Queue a kazoo request ``record`` (its path the server's) as kazoo's ``*_async`` calls
    do; its async result."""
    result = client.handler.async_result()
    kazoo_internals.call(client, record, result)
    return result


def acl_of(client: KazooClient, acl: Any) -> list[Any]:
    """``acl``, or the client's default ACL when it has none, or open to all, as kazoo's
    ``create`` picks it."""
    return list(acl or client.default_acl or OPEN_ACL_UNSAFE)


def explained(client: KazooClient, answer: Any, feature: str, path: str, needs: str) -> Any:
    """``answer``, with the server's ``UnimplementedError`` told as the
    :class:`~pycurator._protocol.errors.ServerFeatureError` of ``feature`` (what the request
    of ``path`` needs, and ``needs`` has); a new async result, answered as ``answer`` is."""
    told = client.handler.async_result()

    def answered(result: Any) -> None:
        value, error = outcome(result)
        if error is None:
            told.set(value)
        elif isinstance(error, UnimplementedError):
            told.set_exception(ServerFeatureError(feature, path, needs))
        else:
            told.set_exception(error)

    if not link_inline(answer, answered):
        answer.rawlink(answered)
    return told


__all__ = ["CAN_REMOVE_WATCHES", "acl_of", "explained", "is_plain", "prefixed", "sent"]
