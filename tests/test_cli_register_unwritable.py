"""``pycurator register`` given a payload or an address no node can hold (a number JSON has no
word for, text Java cannot write, more bytes than a node takes) refuses it as the bad input it
is, naming it, before anything connects, and a real run leaves no node behind."""

from __future__ import annotations

import sys

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator.cli import EXIT_USAGE, CliError, build_parser, cmd_register
from pycurator.testing import free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli

#: (options after NAME --port 1, what the refusal says): each is something Jackson would
#: not read back (NaN and Infinity are no JSON tokens for it), or no node can hold.
UNWRITABLE = [
    (["--payload", "NaN"], "bad --payload: not JSON: NaN"),
    (["--payload=-Infinity"], "bad --payload: not JSON: -Infinity"),
    (["--payload", '{"a": [1, Infinity]}'], "bad --payload: not JSON: Infinity"),
    (["--payload", "1e400"], "inf is not a finite number"),
    (["--payload", '"\\ud800"'], "lone surrogate"),
    (["--address", "\udcff"], "lone surrogate"),  # an argument's byte that is no UTF-8
    (["--payload", '"' + "x" * 1_100_000 + '"'], "ZooKeeper takes at most"),
]


@pytest.mark.parametrize(("options", "says"), UNWRITABLE, ids=lambda v: repr(v)[:40])
def test_a_payload_or_address_no_node_can_hold_is_a_usage_error_before_anything_connects(
    options: list[str], says: str
) -> None:
    hosts = f"127.0.0.1:{free_port()}"  # nothing there: a check after connecting would say so
    args = build_parser().parse_args(
        ["register", "--hosts", hosts, "billing", "--port", "1", *options]
    )
    args.command = ["true"]
    with pytest.raises(CliError) as refused:
        cmd_register(args, sys.stderr)
    assert refused.value.status == EXIT_USAGE, refused.value
    assert says in str(refused.value)


def test_register_refuses_a_nan_payload_with_its_name_and_leaves_no_node(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    """As a user runs it: a clear one-line error and the usage exit status, no traceback, the
    command not run, nothing written under the base."""
    base = f"{zk_path}/services"
    result = run_cli(
        "register", "--hosts", zk_server.hosts, "--base", base, "billing", "--port", "8080",
        "--payload", "NaN", "--", sys.executable, "-c", "print('ran')",
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE, result.stderr
    assert "NaN" in result.stderr and "Traceback" not in result.stderr
    assert "ran" not in result.stdout
    with pytest.raises(NoNodeError):
        zk.get_children(base)
