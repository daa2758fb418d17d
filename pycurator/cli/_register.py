"""``pycurator register``: run a command while an instance of a service is registered for it
(curator-x-discovery's node, which Java's and Spring Cloud's discovery find), and unregister
it once the command ends."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from typing import Any, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss
from kazoo.protocol.states import KazooState

from .._client.interfaces import local_instance
from .._cores.discovery import DEFAULT_BASE_PATH, instance_data
from .._protocol.discovery import ServiceInstance, UriSpec
from .._protocol.discovery_json import JsonInstanceSerializer
from .._protocol.discovery_payloads import CLASS_PROPERTY, payload_from_json
from .._protocol.errors import InstanceFormatError, InvalidServiceInstance, InvalidUriSpec
from .._protocol.registration import check_segment, instance_path
from .._threads.discovery import ServiceDiscovery
from ._common import (
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    WAIT_SIGNALS,
    CliError,
    Interrupter,
    checked_path,
    connected,
    hosts_of,
    noted,
    say,
    signals,
)
from ._run import Guarded, Holding, resolve_command
from ._text import shown

#: What ``register`` puts in the command's environment.
SERVICE_ENV_NAME = "PYCURATOR_SERVICE_NAME"
SERVICE_ENV_ID = "PYCURATOR_SERVICE_ID"
SERVICE_ENV_ADDRESS = "PYCURATOR_SERVICE_ADDRESS"
SERVICE_ENV_PORT = "PYCURATOR_SERVICE_PORT"
SERVICE_ENV_NODE = "PYCURATOR_SERVICE_NODE"
SERVICE_ENV_HOSTS = "PYCURATOR_SERVICE_HOSTS"
#: Where ``register`` and ``services`` look without ``--base``.
BASE_PATH = DEFAULT_BASE_PATH


def payload_of(text: str | None) -> Any:
    """``--payload``: a JSON value, the payload as Python reads it (an object a map, an array
    a list); an object with Jackson's ``@class`` is that Java class's, as in a node."""
    if text is None:
        return None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise CliError(f"bad --payload: not JSON: {exc}", EXIT_USAGE) from None
    if isinstance(value, dict) and CLASS_PROPERTY in value:
        try:
            return payload_from_json(value, {})
        except InstanceFormatError as exc:
            raise CliError(f"bad --payload: {exc}", EXIT_USAGE) from None
    return value


def _no_constant(word: str) -> Any:
    """``NaN`` and ``Infinity``, which Python's reader takes and Jackson's refuses: not JSON."""
    raise ValueError(f"{word} is no JSON value")


def writable(base: str, instance: ServiceInstance) -> None:
    """A usage error naming what no node can hold of ``instance`` (text Java cannot write, a
    number JSON has no word for, more bytes than a node takes), found before connecting."""
    try:
        instance_data(JsonInstanceSerializer(), base, instance)
    except ValueError as exc:
        what = f"{shown(instance.name)}/{shown(instance.id)}"
        reason = shown(str(exc), backslash=False)
        raise CliError(f"cannot register {what}: {reason}", EXIT_USAGE) from None


def instance_of(args: argparse.Namespace) -> ServiceInstance:
    """The instance ``register`` is asked to register, every part checked (a usage error
    naming the option otherwise)."""
    try:
        check_segment("service name", args.name)
        if args.id is not None:
            check_segment("--id", args.id)
        spec = None if args.uri_spec is None else UriSpec(args.uri_spec)
    except (ValueError, InvalidUriSpec) as exc:
        raise CliError(f"bad {_option(exc)}: {exc}", EXIT_USAGE) from None
    try:
        return local_instance(
            args.name,
            port=args.port,
            ssl_port=args.ssl_port,
            address=args.address,
            id=args.id,
            payload=payload_of(args.payload),
            uri_spec=spec,
        )
    except InvalidServiceInstance as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _option(error: Exception) -> str:
    text = str(error)
    if isinstance(error, InvalidUriSpec):
        return "--uri-spec"
    return "--id" if text.startswith("--id") else "NAME"


def _told(err: TextIO, instance: ServiceInstance) -> Any:
    """A connection listener that says, once per expiry, what happens to the registration."""

    def listener(state: str) -> None:
        if state == KazooState.LOST:
            say(
                err,
                f"pycurator: session expired: {shown(instance.name)}/{shown(instance.id)} is "
                "registered again once the connection is back\n",
            )

    return listener


@contextlib.contextmanager
def _listening(client: KazooClient, listener: Any) -> Iterator[None]:
    client.add_listener(listener)
    try:
        yield
    finally:
        client.remove_listener(listener)


def cmd_register(args: argparse.Namespace, err: TextIO) -> int:
    """Run a command while an instance is registered; see ``pycurator register --help``."""
    base = checked_path(args.base, "--base")
    instance = instance_of(args)
    writable(base, instance)
    command = resolve_command(args.command, "pycurator register NAME --port N -- CMD [ARGS...]")
    interrupt, guarded = Interrupter(), Guarded(command)
    before_stop: list[Any] = []
    with connected(args, None, before_stop) as client, guarded.taking_signals():
        discovery = ServiceDiscovery(client, base)
        discovery.start()
        before_stop.append(discovery.close)  # on every way out, within the teardown's wait
        try:
            with interrupt.ending(client.stop):
                discovery.register_service(instance)
        except (ConnectionLoss, ConnectionClosedError) as exc:
            if interrupt.signum is not None:
                return 128 + interrupt.signum
            raise CliError(
                f"could not register {instance.name}/{instance.id}: {exc}", EXIT_UNAVAILABLE
            ) from exc
        if interrupt.signum is not None:
            return 128 + interrupt.signum
        node = instance_path(base, instance.name, instance.id)
        variables = {
            SERVICE_ENV_NAME: instance.name,
            SERVICE_ENV_ID: instance.id,
            SERVICE_ENV_ADDRESS: instance.address or "",
            SERVICE_ENV_PORT: "" if instance.port is None else str(instance.port),
            SERVICE_ENV_NODE: node,
            SERVICE_ENV_HOSTS: hosts_of(args),
        }
        holding = Holding(node, 0, lambda: None, None)
        try:
            with _listening(client, _told(err, instance)):
                return guarded.run(holding, args, err, variables, "registration", None)
        finally:
            with signals(noted, WAIT_SIGNALS):  # the command has ended: unregister now
                discovery.close()
