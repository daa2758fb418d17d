"""Session expiry on the server, on demand.

A second client that connects with the same session id and password and then closes makes the
server end the session and delete its ephemeral nodes at once. (kazoo's and Curator's own test
helpers only make the client believe its session expired; the server keeps the ephemerals until
the session timeout.)
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState


def expire_session(hosts: str, session_id: int, password: bytes, timeout: float = 10.0) -> None:
    """End the session ``session_id`` on the server; its ephemeral nodes are gone on return."""
    twin = KazooClient(hosts=hosts, client_id=(session_id, password), timeout=timeout)
    twin.start(timeout=timeout)
    try:
        twin.stop()  # sends closeSession for the shared session id
    finally:
        twin.close()


def expire_kazoo_session(client: KazooClient, timeout: float = 20.0) -> None:
    """Expire ``client``'s session on the server and wait until ``client`` reports it LOST
    (with the client's handler's event, so it works under gevent and eventlet too)."""
    lost = client.handler.event_object()

    def listener(state: str) -> bool:
        if state == KazooState.LOST:
            lost.set()
            return True
        return False

    client.add_listener(listener)
    try:
        session_id, password = client.client_id
        hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
        expire_session(hosts, session_id, password, timeout)
        if not lost.wait(timeout):
            raise TimeoutError(f"client did not see its session expire within {timeout}s")
    finally:
        client.remove_listener(listener)
