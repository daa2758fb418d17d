"""``connect()``: a started kazoo client with the settings a Curator user expects.

Curator's ``CuratorFrameworkFactory.builder()`` gives a client that reconnects on its own, has
a retry policy for operations, a namespace it makes on first use, and session and connection
timeouts of its own. :func:`connect` gives the same in kazoo's terms and returns a plain
``KazooClient``, so everything written for kazoo keeps working on it:

==========================  ==========================================================
Curator's builder            :func:`connect`
==========================  ==========================================================
``connectString``            ``hosts`` (a chroot suffix works, as in ZooKeeper's client)
``namespace``                ``namespace``: the client's chroot, made at once, as Curator
                             makes it (containers, the client's ACL)
``sessionTimeoutMs``         ``session_timeout`` (seconds; 30 by default, see below)
``connectionTimeoutMs``      ``connect_timeout`` (seconds; 15, Curator's default)
``retryPolicy``              ``retry``: kazoo's ``command_retry`` (``client.retry``); the
                             connection itself is retried for ever, a second apart at most
``authorization``            ``auth``: kazoo's ``auth_data``
``aclProvider``              ``default_acl=[...]`` (passed on to kazoo)
(ZooKeeper's TLS settings)   ``tls``: ``True`` or :class:`TLSOptions`
==========================  ==========================================================

The handler is :class:`pycurator.handlers.FastThreadingHandler` unless another is given
(kazoo's ``SequentialThreadingHandler`` where ``select.poll`` is missing).
"""

from __future__ import annotations

import logging
import math
import select
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, OperationTimeoutError
from kazoo.retry import KazooRetry

from ._checks import MAX_SESSION_TIMEOUT, UNLIMITED_TIMEOUT
from ._deadline import Deadline, DeadlineExpired
from ._errors import ConnectTimeout
from ._paths import validate_path
from ._requests import make_containers_steps
from ._steps import run

log = logging.getLogger("pycurator")

#: The session timeout asked for by default, in seconds: the upper end of the 15 to 30 s that
#: docs/migration.md advises, within a default server's bounds (4 to 40 s); Curator asks for
#: 60 s, which such a server grants as 40, kazoo for 10.
DEFAULT_SESSION_TIMEOUT = 30.0
#: Curator's default ``connectionTimeoutMs``, in seconds.
DEFAULT_CONNECT_TIMEOUT = 15.0
#: Between two rounds of connection attempts: 0.1 s, doubling up to this many seconds (and
#: never giving up), as ZooKeeper's Java client waits up to a second between attempts; kazoo's
#: own default doubles up to an hour.
RECONNECT_MAX_DELAY = 1.0

#: kazoo's arguments that :func:`connect` sets from its own, and the argument to use instead.
_OWN_ARGUMENTS = {
    "hosts": "hosts",
    "timeout": "session_timeout",
    "handler": "handler",
    "auth_data": "auth",
    "command_retry": "retry",
    "use_ssl": "tls",
    "ca": "tls",
    "certfile": "tls",
    "keyfile": "tls",
    "keyfile_password": "tls",
    "verify_certs": "tls",
    "check_hostname": "tls",
}


@dataclass(frozen=True)
class TLSOptions:
    """How :func:`connect` talks TLS to the ensemble (kazoo's ``use_ssl`` and its companions).

    ``ca``: a file of CA certificates to trust (else the system's); ``certfile`` and ``keyfile``
    (with ``keyfile_password`` if it is encrypted): the client's certificate, for servers that
    ask for one; ``verify_certs``: check the server's certificate; ``check_hostname``: check
    that it names the host connected to (kazoo 2.11+)."""

    ca: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    keyfile_password: str | None = None
    verify_certs: bool = True
    check_hostname: bool = False

    def kazoo_arguments(self) -> dict[str, Any]:
        """The arguments of ``KazooClient`` that say this."""
        arguments: dict[str, Any] = {
            "use_ssl": True,
            "ca": self.ca,
            "certfile": self.certfile,
            "keyfile": self.keyfile,
            "keyfile_password": self.keyfile_password,
            "verify_certs": self.verify_certs,
        }
        if self.check_hostname:  # an argument kazoo has only from 2.11 on
            arguments["check_hostname"] = True
        return arguments


def curator_retry(handler: Any) -> KazooRetry:
    """Curator's usual ``ExponentialBackoffRetry(1000, 3)`` in kazoo's terms: three retries (four
    tries) of an operation, one second apart, doubling."""
    return KazooRetry(max_tries=4, delay=1.0, backoff=2, sleep_func=handler.sleep_func)


def reconnecting_retry(handler: Any) -> KazooRetry:
    """Connection attempts that never give up, :data:`RECONNECT_MAX_DELAY` apart at most."""
    return KazooRetry(
        max_tries=-1,
        delay=0.1,
        backoff=2,
        max_delay=RECONNECT_MAX_DELAY,
        sleep_func=handler.sleep_func,
    )


def default_handler() -> Any:
    """The fast handler, or kazoo's own where ``select.poll`` is missing (Windows)."""
    if hasattr(select, "poll"):
        from .handlers import FastThreadingHandler

        return FastThreadingHandler()
    from kazoo.handlers.threading import SequentialThreadingHandler

    return SequentialThreadingHandler()


def _seconds(name: str, value: object, most: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0 or value > most:
        raise ValueError(
            f"{name} must be a finite number of seconds > 0 and at most {most:.0f}, not {value!r}"
        )
    return float(value)


def with_namespace(hosts: str, namespace: str | None) -> str:
    """``hosts`` with ``namespace`` appended to its chroot (or as its chroot), checked as Curator
    checks a namespace; ``hosts`` itself when there is none (None or ``""``)."""
    if not isinstance(hosts, str):
        raise TypeError(f"hosts must be a connect string, not {type(hosts).__name__}")
    if namespace is None or namespace == "":
        return hosts
    if not isinstance(namespace, str):
        raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
    try:
        validate_path("/" + namespace)
    except ValueError as exc:
        raise ValueError(f"Invalid namespace: {namespace}, {exc}") from None
    return f"{hosts.rstrip('/')}/{namespace}"


def connect(
    hosts: str,
    *,
    namespace: str | None = None,
    session_timeout: float = DEFAULT_SESSION_TIMEOUT,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    retry: KazooRetry | None = None,
    auth: Sequence[tuple[str, str]] | None = None,
    tls: bool | TLSOptions = False,
    handler: Any = None,
    **kazoo_kwargs: Any,
) -> KazooClient:
    """A started ``KazooClient`` on ``hosts``, set up as Curator's builder sets up a client.

    - ``namespace``: as Curator's ``namespace("a/b")``, every path of the client is below it (a
      kazoo chroot, after any chroot ``hosts`` has). Its missing levels are made before this
      returns, as Curator makes them: empty CONTAINER nodes with the client's ``default_acl``
      (open to all without one), checking from the deepest level up first, so an existing
      namespace needs no right to create above it. A refusal of the server (kazoo's
      ``NoAuthError``, ``NoNodeError`` when a chroot of ``hosts`` is missing) is raised
      unchanged.
    - ``session_timeout``: seconds (the server grants a value within its bounds), at most
      :data:`~pycurator._checks.MAX_SESSION_TIMEOUT` (what the protocol carries). Set the same
      on the Java side (``sessionTimeoutMs``): a crashed holder blocks the others that long.
    - ``connect_timeout``: seconds for the session and the namespace together, below
      :data:`~pycurator._checks.UNLIMITED_TIMEOUT` (about 32 years).
    - ``retry``: the client's ``command_retry`` (``client.retry(...)``); by default three retries
      a second apart, doubling. The connection is retried for ever (pass kazoo's
      ``connection_retry`` to change that). pycurator's recipes retry on their own.
    - ``auth``: ``(scheme, credential)`` pairs, as kazoo's ``auth_data``.
    - ``tls``: ``True`` (the system's CAs) or a :class:`TLSOptions`.
    - ``handler``: a kazoo handler instance; :class:`pycurator.handlers.FastThreadingHandler`
      by default.
    - Any other keyword goes to ``KazooClient`` (``default_acl``, ``read_only``, ``logger``...).

    Raises :class:`ConnectTimeout` (naming the hosts and the timeout) when no session is made
    within ``connect_timeout``; on that and every other failure the client is stopped and
    closed, and none of its threads is left. Bad arguments raise ``ValueError`` or
    ``TypeError`` before anything starts."""
    for name, instead in _OWN_ARGUMENTS.items():
        if name in kazoo_kwargs:
            raise TypeError(f"connect() sets kazoo's {name}: give {instead}= instead")
    session = _seconds("session_timeout", session_timeout, MAX_SESSION_TIMEOUT)
    within = _seconds("connect_timeout", connect_timeout, UNLIMITED_TIMEOUT)
    full_hosts = with_namespace(hosts, namespace)
    if not isinstance(tls, (bool, TLSOptions)):
        raise TypeError(f"tls must be True, False or a TLSOptions, not {type(tls).__name__}")
    handler = default_handler() if handler is None else handler
    kazoo_kwargs.setdefault("connection_retry", reconnecting_retry(handler))
    if tls:
        kazoo_kwargs.update((TLSOptions() if tls is True else tls).kazoo_arguments())
    client = KazooClient(
        hosts=full_hosts,
        timeout=session,
        handler=handler,
        auth_data=list(auth) if auth else None,
        command_retry=curator_retry(handler) if retry is None else retry,
        **kazoo_kwargs,
    )
    try:
        _start(client, hosts, within, namespace)
    except BaseException:
        _discard(client)
        raise
    return client


def _discard(client: KazooClient) -> None:
    """Stop and close ``client``; an error doing so is logged (the caller raises its own)."""
    try:
        client.stop()
    except Exception:
        log.warning("stopping a client that failed to connect", exc_info=True)
    finally:
        client.close()


def _start(client: KazooClient, hosts: str, within: float, namespace: str | None) -> None:
    """Start ``client`` and make its namespace, within ``within`` seconds."""
    deadline = Deadline(within)
    # kazoo's start() would warn that a chroot is missing: the namespace is made below
    live = client.start_async()
    live.wait(within)
    if not client.connected:
        raise ConnectTimeout(hosts, within)
    if not namespace:
        return
    chroot: str = client.chroot
    below = len(chroot) - len(namespace) - 1
    while True:
        try:
            run(client, make_containers_steps(client, chroot, below, deadline))
            return
        except DeadlineExpired:
            raise ConnectTimeout(hosts, within) from None
        except (ConnectionLoss, OperationTimeoutError):
            # the request is sent again; kazoo holds it until the connection is back
            if deadline.expired():
                raise ConnectTimeout(hosts, within) from None


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_SESSION_TIMEOUT",
    "RECONNECT_MAX_DELAY",
    "TLSOptions",
    "connect",
    "curator_retry",
    "default_handler",
    "reconnecting_retry",
    "with_namespace",
]
