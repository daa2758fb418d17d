"""``connect()``: a started kazoo client with the settings a Curator user expects (its connect
string and namespace checked by :mod:`pycurator._connect_string`).

Curator's ``CuratorFrameworkFactory.builder()`` gives a client that reconnects on its own, has
a retry policy for operations, a namespace it makes on first use, and session and connection
timeouts of its own. :func:`connect` gives the same in kazoo's terms and returns a plain
``KazooClient``, so everything written for kazoo keeps working on it:

==========================  ==========================================================
Curator's builder            :func:`connect`
==========================  ==========================================================
``connectString``            ``hosts`` (a chroot suffix works, as in ZooKeeper's client),
                             checked before anything starts
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
(kazoo's ``SequentialThreadingHandler`` where ``select.poll`` is missing), and the client is
served by pycurator's connection loop (:func:`pycurator.handlers.use_lean_loop`) unless
``lean_loop=False``.

pycurator prints nothing of its own accord: its loggers (``pycurator``, and
:data:`KAZOO_LOGGER`, the logger of the clients :func:`connect` makes) end in a
``logging.NullHandler``, so their records reach only the handlers a program configured.
"""

from __future__ import annotations

import logging
import math
import select
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, OperationTimeoutError
from kazoo.retry import KazooRetry

from ._client import kazoo_internals
from ._client.kazoo_internals import use_lean_loop
from ._client.runtime import runtime_of
from ._client.transport import transport_of
from ._connect_string import ConnectString, label, with_namespace
from ._protocol.checks import MAX_SESSION_TIMEOUT, UNLIMITED_TIMEOUT
from ._protocol.deadline import Deadline, DeadlineExpired
from ._protocol.errors import ConnectTimeout
from ._protocol.parents import namespace_steps
from ._threads.runner import run

log = logging.getLogger("pycurator")
#: The logger of the kazoo clients :func:`connect` makes: below kazoo's own, so that what a
#: program sets for ``kazoo`` (a level, a handler) holds for them too.
KAZOO_LOGGER = "kazoo.client.pycurator"
# a library prints only through the handlers its program configured (Python's last resort
# handler would print WARNINGs on stderr otherwise)
log.addHandler(logging.NullHandler())
logging.getLogger(KAZOO_LOGGER).addHandler(logging.NullHandler())

#: The session timeout asked for by default, in seconds: the upper end of the 15 to 30 s that
#: docs/migration.md advises, within a default server's bounds (4 to 40 s); Curator asks for
#: 60 s, which such a server grants as 40, kazoo for 10. The command line asks for 10 s (see
#: :func:`connect` for why the two differ).
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


if TYPE_CHECKING:
    _Adapter = logging.LoggerAdapter[logging.Logger]
else:  # not subscriptable before Python 3.11
    _Adapter = logging.LoggerAdapter


class _ConnectLog(_Adapter):
    """kazoo's logger for a client :func:`connect` makes: it passes every record on to
    ``logger`` unchanged and, while :attr:`collecting`, keeps the last failure kazoo reported
    for each server (kazoo logs it and tries again; it raises nothing)."""

    def __init__(self, hosts: ConnectString, logger: Any) -> None:
        super().__init__(logger, {})
        self.collecting = True
        pairs = zip(hosts.servers, hosts.labels, strict=True)
        self._labels = {(host.lower(), port): label for (host, port), label in pairs}
        self._order = hosts.labels
        self._causes: dict[str, str] = {}
        self._trying: str | None = None
        self._mutex = threading.Lock()

    def causes(self) -> dict[str, str]:
        """The last failure seen per server, in the connect string's order."""
        with self._mutex:
            known = {label: self._causes[label] for label in self._order if label in self._causes}
            known.update(self._causes)
            return known

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if self.collecting:
            self._note(level, msg, args, kwargs.get("exc_info"))
        if self.logger.isEnabledFor(level):
            # one frame more to skip: the record names kazoo's line as its caller, not this one
            kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
            self.logger.log(level, msg, *args, **kwargs)

    def warn(self, msg: object, *args: object, **kwargs: Any) -> None:
        """``warning``, under the deprecated name kazoo still calls."""
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        self.log(logging.WARNING, msg, *args, **kwargs)

    def _note(self, level: int, msg: object, args: tuple[object, ...], exc_info: object) -> None:
        # kazoo's records: "Connecting to %s(%s):%s, ..." (host, address, port) before each
        # attempt, then a WARNING with the error ("Connection dropped: %s", "Cannot resolve
        # %s: %s"...), or an ERROR with the exception (kazoo/protocol/connection.py)
        if isinstance(msg, str) and msg.startswith("Connecting to ") and len(args) >= 3:
            self._trying = self._label_of(args[0], args[2])
            return
        if level < logging.WARNING:
            return
        error = next((arg for arg in args if isinstance(arg, BaseException)), None)
        if error is None and exc_info:
            error = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        if error is None:
            return
        if isinstance(error, socket.gaierror) and args and isinstance(args[0], str):
            name = args[0].lower()
            failed = [label for (host, _), label in self._labels.items() if host == name]
        else:
            failed = [self._trying] if self._trying else []
        with self._mutex:
            for label in failed:
                self._causes[label] = _describe(error)

    def _label_of(self, host: object, port: object) -> str:
        key = (str(host).lower(), port if isinstance(port, int) else -1)
        return self._labels.get(key) or label(str(host), port)


def _describe(error: BaseException) -> str:
    """What went wrong, in the words of the error kazoo met (``Connection refused``...)."""
    if isinstance(error, OSError) and error.strerror:
        return str(error.strerror)
    text = str(error).removeprefix("socket connection error: ")
    if text:
        return text
    return type(error).__name__


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
    """The fast handler, or kazoo's own where ``select.poll`` is missing (Windows) or on a kazoo
    pycurator is not checked against (:mod:`~pycurator._client.kazoo_internals.releases`), whose
    connection the fast handler may not know."""
    if hasattr(select, "poll") and kazoo_internals.checked():
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
    lean_loop: bool = True,
    **kazoo_kwargs: Any,
) -> KazooClient:
    """A started ``KazooClient`` on ``hosts``, set up as Curator's builder sets up a client.

    - ``hosts``: ZooKeeper's connect string, ``host[:port],...[/chroot]`` (see
      :class:`ConnectString`); an empty or malformed one raises ``ValueError`` naming the
      problem. A name that does not resolve is retried until ``connect_timeout``, as DNS may
      be failing for a while, and named in the :class:`ConnectTimeout`.
    - ``namespace``: as Curator's ``namespace("a/b")``, every path of the client is below it (a
      kazoo chroot, after any chroot ``hosts`` has). Its missing levels are made before this
      returns, as Curator makes them: empty CONTAINER nodes with the client's ``default_acl``
      (open to all without one), checking first whether it exists, and making the deepest
      missing level first, so that no right to create is needed above the first level that
      exists (none at all for an existing namespace). A refusal of the server (kazoo's
      ``NoAuthError``, ``NoNodeError`` when a chroot of ``hosts`` is missing) is raised
      unchanged.
    - ``session_timeout``: seconds (the server grants a value within its bounds), at most
      :data:`~pycurator._protocol.checks.MAX_SESSION_TIMEOUT` (what the protocol carries). Set the
      same on the Java side (``sessionTimeoutMs``): a crashed holder blocks the others that long.
      30 by default, and 10 for the command line on purpose: a service's pauses (a busy GIL, a
      long collection) must not expire its session and lose every lock it holds, while
      ``pycurator lock`` stops its command once the connection is lost anyway, so a shorter
      session there only frees a crashed holder's lock sooner. Curator asks for 60.
    - ``connect_timeout``: seconds for the session and the namespace together, below
      :data:`~pycurator._protocol.checks.UNLIMITED_TIMEOUT` (about 32 years).
    - ``retry``: the client's ``command_retry`` (``client.retry(...)``); by default three retries
      a second apart, doubling. The connection is retried for ever (pass kazoo's
      ``connection_retry`` to change that). pycurator's recipes retry on their own.
    - ``auth``: ``(scheme, credential)`` pairs, as kazoo's ``auth_data``.
    - ``tls``: ``True`` (the system's CAs) or a :class:`TLSOptions`.
    - ``handler``: a kazoo handler instance; :class:`pycurator.handlers.FastThreadingHandler`
      by default.
    - ``lean_loop``: serve the client with pycurator's connection loop
      (:func:`pycurator.handlers.use_lean_loop`; kazoo's own loop with ``False``, and wherever
      that function leaves a client on it: gevent, eventlet, TLS).
    - Any other keyword goes to ``KazooClient`` (``default_acl``, ``read_only``, ``logger``...).
      kazoo's records go to ``logger``, else to :data:`KAZOO_LOGGER`.

    Raises :class:`ConnectTimeout` when no session is made within ``connect_timeout``, naming
    the hosts, the timeout and the last failure seen for each server (``causes``); on that and
    every other failure the client is stopped and closed, and none of its threads is left. Bad
    arguments raise ``ValueError`` or ``TypeError`` before anything starts."""
    for name, instead in _OWN_ARGUMENTS.items():
        if name in kazoo_kwargs:
            raise TypeError(f"connect() sets kazoo's {name}: give {instead}= instead")
    session = _seconds("session_timeout", session_timeout, MAX_SESSION_TIMEOUT)
    within = _seconds("connect_timeout", connect_timeout, UNLIMITED_TIMEOUT)
    servers = ConnectString.parse(hosts)
    full_hosts = with_namespace(servers.text, namespace)
    if not isinstance(tls, (bool, TLSOptions)):
        raise TypeError(f"tls must be True, False or a TLSOptions, not {type(tls).__name__}")
    handler = default_handler() if handler is None else handler
    kazoo_kwargs.setdefault("connection_retry", reconnecting_retry(handler))
    if tls:
        kazoo_kwargs.update((TLSOptions() if tls is True else tls).kazoo_arguments())
    logger = kazoo_kwargs.pop("logger", None) or logging.getLogger(KAZOO_LOGGER)
    connect_log = _ConnectLog(servers, logger)
    client = KazooClient(
        hosts=full_hosts,
        timeout=session,
        handler=handler,
        auth_data=list(auth) if auth else None,
        command_retry=curator_retry(handler) if retry is None else retry,
        logger=connect_log,
        **kazoo_kwargs,
    )
    if lean_loop:
        use_lean_loop(client)
    runtime_of(client)  # before the first connection: it sees the session timeout granted
    try:
        _start(client, servers.text, within, namespace, connect_log)
    except BaseException:
        _discard(client)
        raise
    finally:
        connect_log.collecting = False
    return client


def _discard(client: KazooClient) -> None:
    """Stop and close ``client``; an error doing so is logged (the caller raises its own)."""
    try:
        client.stop()
    except Exception:
        log.warning("stopping a client that failed to connect", exc_info=True)
    finally:
        client.close()


def _start(
    client: KazooClient, hosts: str, within: float, namespace: str | None, failures: _ConnectLog
) -> None:
    """Start ``client`` and make its namespace, within ``within`` seconds; a timeout names the
    failures the client's log saw."""
    deadline = Deadline(within)
    # kazoo's start() would warn that a chroot is missing: the namespace is made below
    live = client.start_async()
    live.wait(within)
    if not client.connected:
        raise ConnectTimeout(hosts, within, failures.causes())
    if not namespace:
        return
    below = len(client.chroot) - len(namespace) - 1
    while True:
        try:
            run(transport_of(client), namespace_steps(below, deadline))
            return
        except DeadlineExpired:
            raise ConnectTimeout(hosts, within, failures.causes()) from None
        except (ConnectionLoss, OperationTimeoutError):
            # the request is sent again; kazoo holds it until the connection is back
            if deadline.expired():
                raise ConnectTimeout(hosts, within, failures.causes()) from None


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_SESSION_TIMEOUT",
    "KAZOO_LOGGER",
    "RECONNECT_MAX_DELAY",
    "TLSOptions",
    "connect",
    "curator_retry",
    "default_handler",
    "reconnecting_retry",
]
