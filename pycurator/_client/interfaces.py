"""The host's network addresses as Java's ``NetworkInterface`` lists them, for the address
Curator's ``ServiceInstance.builder()`` gives an instance.

On Linux the JDK asks the kernel for the IPv4 addresses with ``SIOCGIFCONF`` and reads the
IPv6 ones from ``/proc/net/if_inet6``; the same sources in the same order give the same
first address here (:func:`pycurator._protocol.discovery.java_interface_order`). Elsewhere,
the addresses the host's name resolves to stand in, in the resolver's order.
"""

from __future__ import annotations

import array
import contextlib
import socket
import struct
import sys
from collections.abc import Callable
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any

from .._protocol.discovery import (
    InterfaceAddress,
    ServiceInstance,
    ServiceType,
    UriSpec,
    curator_addresses,
    java_interface_order,
    new_id,
    now_ms,
)

IF_INET6 = "/proc/net/if_inet6"
SIOCGIFCONF = 0x8912
SIOCGIFFLAGS = 0x8913
IFF_POINTOPOINT = 0x10
IFNAMSIZ = 16
#: ``struct ifreq``: a name, then a union whose largest member is ``struct ifmap``.
IFREQ_SIZE = IFNAMSIZ + (24 if struct.calcsize("P") == 8 else 16)


def local_addresses() -> list[str]:
    """This host's addresses Curator's builder would choose from, in its order, as Java
    writes them (``192.0.2.2``, ``fd00:0:0:0:0:0:0:2%eth0``); the first is its default."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            return curator_addresses(linux_interface_addresses())
    return curator_addresses(_resolved_addresses())


def linux_interface_addresses() -> list[InterfaceAddress]:
    """Every address of every interface, in the order Java lists them on Linux."""
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:

        def point_to_point(name: str) -> bool:
            request = struct.pack(f"{IFNAMSIZ}sh", name.encode()[: IFNAMSIZ - 1], 0)
            try:
                answer = fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request)
            except OSError:
                return False
            return bool(struct.unpack_from("h", answer, IFNAMSIZ)[0] & IFF_POINTOPOINT)

        ipv4 = [
            InterfaceAddress(name, IPv4Address(address), point_to_point(name))
            for name, address in _ipv4_by_ioctl(sock.fileno(), fcntl.ioctl)
        ]
        ipv6 = []
        with contextlib.suppress(FileNotFoundError), open(IF_INET6, encoding="ascii") as lines:
            for name, address in parse_if_inet6(lines.read()):
                ipv6.append(InterfaceAddress(name, address, point_to_point(name)))
    return java_interface_order(ipv4, ipv6)


def _ipv4_by_ioctl(fd: int, ioctl: Callable[[int, int, bytes], bytes]) -> list[tuple[str, bytes]]:
    """``SIOCGIFCONF``: (interface, packed IPv4 address) in the kernel's order; an alias
    (``eth0:1``) counts as its interface, as the JDK counts it."""
    size = IFREQ_SIZE * 32
    while True:  # a buffer the kernel fills up may have left some out: ask with a larger one
        buffer = array.array("B", bytes(size))
        answer = ioctl(fd, SIOCGIFCONF, struct.pack("iP", size, buffer.buffer_info()[0]))
        used = struct.unpack("iP", answer)[0]
        if used < size:
            break
        size *= 2
    data = buffer.tobytes()
    found = []
    for offset in range(0, used, IFREQ_SIZE):
        name = data[offset : offset + IFNAMSIZ].split(b"\0", 1)[0].decode(errors="replace")
        family = struct.unpack_from("H", data, offset + IFNAMSIZ)[0]
        if family == socket.AF_INET:
            start = offset + IFNAMSIZ + 4  # sockaddr_in: family, port, then the address
            found.append((name.split(":", 1)[0], data[start : start + 4]))
    return found


def parse_if_inet6(text: str) -> list[tuple[str, IPv6Address]]:
    """The lines of ``/proc/net/if_inet6`` (address, index, prefix, scope, flags, name), in
    order: (interface, address)."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 6 and len(fields[0]) == 32:
            found.append((fields[5], IPv6Address(bytes.fromhex(fields[0]))))
    return found


def _resolved_addresses() -> list[InterfaceAddress]:
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    found: list[InterfaceAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        host = str(sockaddr[0]).split("%", 1)
        address = ip_address(host[0])
        entry = InterfaceAddress(host[1] if len(host) > 1 else "", address)
        if entry not in found:
            found.append(entry)
    return found


def local_address() -> str | None:
    """The address Curator's ``ServiceInstance.builder()`` gives an instance: the first of
    :func:`local_addresses`, or None when the host has none (then so does Java's)."""
    found = local_addresses()
    return found[0] if found else None


def local_instance(
    name: str,
    *,
    port: int | None = None,
    ssl_port: int | None = None,
    payload: Any = None,
    service_type: ServiceType = ServiceType.DYNAMIC,
    uri_spec: UriSpec | None = None,
    enabled: bool = True,
    id: str | None = None,
    address: str | None = None,
    registration_time_utc: int | None = None,
) -> ServiceInstance:
    """An instance of ``name`` on this host, with the defaults of Curator's
    ``ServiceInstance.builder()``: a random UUID for ``id``, :func:`local_address` for
    ``address``, now (in milliseconds) for ``registration_time_utc``; each may be given."""
    when = registration_time_utc
    fields: dict[str, Any] = {
        "id": new_id() if id is None else id,
        "address": local_address() if address is None else address,
        "registration_time_utc": now_ms() if when is None else when,
    }
    return ServiceInstance(
        name,
        port=port,
        ssl_port=ssl_port,
        payload=payload,
        service_type=service_type,
        uri_spec=uri_spec,
        enabled=enabled,
        **fields,
    )
