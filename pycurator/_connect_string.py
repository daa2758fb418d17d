"""Connect strings, ``host[:port],host[:port]...[/chroot]``, read as ZooKeeper's client reads
them (:class:`ConnectString`), and a Curator namespace appended to one (:func:`with_namespace`),
each checked before anything starts."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ._protocol.paths import validate_path

#: The port of a server the connect string names without one (ZooKeeper's client port).
DEFAULT_PORT = 2181
#: A host name or an IPv4 address: letters, digits, ``_``, ``.`` and ``-``, not first ``.``/``-``.
_HOST_NAME = re.compile(r"\w[\w.-]*")
_EXAMPLE = "as in 'zk1:2181,zk2:2181,zk3:2181/app'"


@dataclass(frozen=True)
class ConnectString:
    """A ZooKeeper connect string, ``host[:port],host[:port]...[/chroot]``, as ZooKeeper's client
    reads it: the port is 2181 where none is given, an IPv6 address goes in brackets
    (``[::1]:2181``), spaces around a server are ignored, a trailing ``/`` of the chroot too.

    :meth:`parse` raises ``ValueError`` naming the problem for an empty or blank string, an
    empty server (``a:1,,b:2``), a bad host or port, or a chroot ZooKeeper refuses. A name that
    does not resolve passes: DNS may fail for a while, and :func:`connect` retries it."""

    #: ``(host, port)`` of each server, in order.
    servers: tuple[tuple[str, int], ...]
    #: The chroot, ``""`` for none.
    chroot: str
    #: The string itself, without the spaces and the trailing ``/`` that :meth:`parse` ignores.
    text: str

    @property
    def labels(self) -> tuple[str, ...]:
        """``host:port`` of each server (an IPv6 address in brackets), as errors name it."""
        return tuple(label(host, port) for host, port in self.servers)

    @classmethod
    def parse(cls, hosts: str) -> ConnectString:
        """``hosts`` read, or ``ValueError`` (``TypeError`` if it is not a str)."""
        if not isinstance(hosts, str):
            raise TypeError(f"hosts must be a connect string, not {type(hosts).__name__}")
        if not hosts.strip():
            raise ValueError(f"empty connect string {hosts!r}: name the servers, {_EXAMPLE}")

        def bad(why: str) -> ValueError:
            return ValueError(f"bad connect string {hosts!r}: {why}")

        if "://" in hosts:
            raise bad(f"a connect string has no scheme, {_EXAMPLE}")
        part, slash, chroot = hosts.strip().partition("/")
        chroot = f"/{chroot}".rstrip("/") if slash else ""
        if chroot:
            try:
                validate_path(chroot)
            except ValueError as exc:
                raise bad(f"bad chroot: {exc}") from None
        entries = [entry.strip() for entry in part.split(",")]
        servers: list[tuple[str, int]] = []
        for number, entry in enumerate(entries, 1):
            if not entry:
                where = f"server {number} of {len(entries)}"
                raise bad(f"{where} is empty" if part.strip() else "no server before the chroot")
            try:
                servers.append(_server(entry))
            except ValueError as exc:
                raise bad(str(exc)) from None
        return cls(tuple(servers), chroot, ",".join(entries) + chroot)


def _server(entry: str) -> tuple[str, int]:
    """``(host, port)`` of one server of a connect string, or ``ValueError`` saying why not."""
    if entry.startswith("["):
        address, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"write an IPv6 address as [address]:port, not {entry!r}")
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            raise ValueError(f"{address!r} in {entry!r} is not an IPv6 address") from None
        host, colon, port = address, bool(rest), rest[1:]
    else:
        host, separator, port = entry.partition(":")
        colon = bool(separator)
        if ":" in port:
            raise ValueError(f"{entry!r} has more than one ':' (write IPv6 as [::1]:2181)")
        if not host:
            raise ValueError(f"no host before the port in {entry!r}")
        if not _HOST_NAME.fullmatch(host):
            spaced = " (it has a space in it)" if any(c.isspace() for c in host) else ""
            raise ValueError(f"{host!r} is not a host name or address{spaced}")
    if colon and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"bad port in {entry!r}: give a whole number from 1 to 65535")
    return host, int(port) if colon else DEFAULT_PORT


def label(host: str, port: object) -> str:
    """``host:port`` as errors name a server (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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


__all__ = ["DEFAULT_PORT", "ConnectString", "label", "with_namespace"]
