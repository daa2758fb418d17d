"""Bad input at the command line: one line on stderr naming the problem, and its own status."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pycurator._connect import DEFAULT_SESSION_TIMEOUT
from pycurator.cli import (
    DEFAULT_HOSTS,
    EXIT_CANNOT_RUN,
    EXIT_NO_JAVA,
    EXIT_NOT_FOUND,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    HOSTS_ENV,
    build_parser,
    main,
)
from pycurator.cli._common import hosts_of
from pycurator.testing import free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import cli_env, run_cli
from .support import children
from .test_connect_errors import UNKNOWN, unknown_host_error

LOCK = ["lock", "/locks/x"]
COMMAND = ["--", "true"]

#: (command, option, whether zero is meaningful)
NUMERIC_OPTIONS = [
    ("lock", "--timeout", True),
    ("lock", "--grace", True),
    ("lock", "--poll-interval", False),
    ("lock", "--connect-timeout", False),
    ("lock", "--session-timeout", False),
    ("inspect", "--connect-timeout", False),
    ("inspect", "--session-timeout", False),
    ("revoke", "--session-timeout", False),
    ("demo", "--hold-ms", True),
    ("demo", "--connect-timeout", False),
]


def command_line(command: str, option: str, value: str) -> list[str]:
    tail = {
        "lock": ["/locks/x", "--", "true"],
        "inspect": ["/locks/x"],
        "revoke": ["/locks/x/lock-0000000001"],
        "demo": [],
    }[command]
    return [command, f"{option}={value}", *tail]


def usage_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


MEANINGLESS = [
    pytest.param(command, option, value, id=f"{command}{option}={value}")
    for command, option, zero_ok in NUMERIC_OPTIONS
    for value in ("nan", "inf", "-inf", "-1", "0", "soon")
    if not (value == "0" and zero_ok)
]


def parse_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line the command's parser prints for ``args``, run in this process (the parser
    is all that runs: it exits before anything connects)."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == EXIT_USAGE
    return usage_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(("command", "option", "value"), MEANINGLESS)
def test_a_meaningless_number_is_one_usage_line_naming_the_option(
    command: str, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = parse_error(command_line(command, option, value), capsys)
    assert f"argument {option}: must be a finite number" in line
    assert repr(value) in line


def test_the_command_itself_rejects_nan_in_one_line() -> None:
    result = run_cli(*command_line("lock", "--timeout", "nan"))
    assert result.returncode == EXIT_USAGE
    assert "argument --timeout: must be a finite number" in usage_error_line(result.stderr)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["lock", "--semaphore", "0", "/locks/x", "--", "true"], "--semaphore"),
        (["lock", "--semaphore", "1.5", "/locks/x", "--", "true"], "--semaphore"),
        (["demo", "--rounds", "-1"], "--rounds"),
        (["demo", "--python-threads", "nan"], "--python-threads"),
        (["demo", "--java-threads", "-2"], "--java-threads"),
    ],
)
def test_a_bad_count_is_one_usage_line_naming_the_option(
    args: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert f"argument {option}: must be a whole number" in parse_error(args, capsys)


def test_the_global_options_may_come_before_the_command(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    result = run_cli("--hosts", zk_server.hosts, "--connect-timeout", "5", "inspect", zk_path)
    assert result.returncode == 0, result.stderr
    assert f"{zk_path}: no such node" in result.stdout


def test_a_global_option_after_the_command_wins_over_the_same_before_it(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    unreachable = f"127.0.0.1:{free_port()}"
    result = run_cli("--hosts", unreachable, "inspect", "--hosts", zk_server.hosts, zk_path)
    assert result.returncode == 0, result.stderr


def test_a_meaningless_number_before_the_command_is_one_usage_line_naming_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = parse_error(["--session-timeout", "nan", "inspect", "/locks/x"], capsys)
    assert (
        "argument --session-timeout: must be a finite number > 0 and at most 2147483, not 'nan'"
        in line
    )


@pytest.mark.parametrize(
    ("args", "advice"),
    [
        (["lock", "/locks/x", "echo", "hi"], "pycurator lock /locks/x -- echo hi"),
        (
            ["elect", "/e", "--id", "a", "sh", "-c", "exit 3"],
            "pycurator elect /e --id a -- sh -c 'exit 3'",
        ),
        (["lock", "/locks/x", "ls", "-q"], "pycurator lock [OPTIONS] PATH -- CMD [ARGS...]"),
    ],
)
def test_a_command_to_run_without_the_separator_is_a_usage_line_showing_where_it_goes(
    args: list[str], advice: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = parse_error(args, capsys)
    assert line.startswith(f"pycurator {args[0]}: error: unrecognized arguments: ")
    assert line.endswith(f"; put -- before the command to run: {advice}")


def test_an_extra_argument_to_inspect_is_a_usage_line_without_the_separator_advice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = parse_error(["inspect", "/locks/x", "extra"], capsys)
    assert line == "pycurator inspect: error: unrecognized arguments: extra"


@pytest.fixture
def not_runnable(tmp_path: Path) -> dict[str, str]:
    """Commands that exist but cannot be run, by what is wrong with them."""
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\nexit 0\n")
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF\x00not really a program")
    garbage.chmod(0o755)
    return {
        "not executable": str(plain),
        "a directory": str(tmp_path),
        "exec format error": str(garbage),
    }


@pytest.mark.parametrize("what", ["not executable", "a directory", "exec format error"])
def test_a_command_that_cannot_be_run_exits_126_and_leaves_no_node(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    not_runnable: dict[str, str],
    what: str,
) -> None:
    command = not_runnable[what]
    result = run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", command)
    assert result.returncode == EXIT_CANNOT_RUN, result.stderr
    assert f"cannot run {command}" in usage_error_line(result.stderr)
    assert children(zk, zk_path) == []


def test_a_missing_path_command_exits_127(zk_server: ZooKeeperTarget, tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    result = run_cli("lock", "--hosts", zk_server.hosts, "/locks/x", "--", missing)
    assert result.returncode == EXIT_NOT_FOUND
    assert f"command not found: {missing}" in usage_error_line(result.stderr)


def test_demo_without_jpype_says_how_to_install_it(
    zk_server: ZooKeeperTarget, tmp_path: Path
) -> None:
    (tmp_path / "jpype.py").write_text("raise ImportError('No module named jpype (shadowed)')\n")
    pythonpath = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    result = run_cli(
        "demo", "--hosts", zk_server.hosts, "--rounds", "1", env=cli_env(PYTHONPATH=pythonpath)
    )
    assert result.returncode == EXIT_NO_JAVA, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "pip install 'pycurator-zk[interop]'" in lines[0]
    assert "cannot connect" not in lines[0]


def test_inspect_tree_and_watch_together_is_a_usage_error_before_connecting() -> None:
    hosts = f"127.0.0.1:{free_port()}"
    result = run_cli("inspect", "--tree", "--watch", "--hosts", hosts, "/locks")
    assert result.returncode == EXIT_USAGE
    assert "--tree and --watch do not go together" in usage_error_line(result.stderr)


# -- the ensemble ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "problem"),
    [
        ("", "empty connect string ''"),
        (" ", "empty connect string ' '"),
        ("not a host string", "'not a host string' is not a host name or address"),
        ("zk1:2181,,zk2:2181", "server 2 of 3 is empty"),
        ("zk1:99999", "bad port in 'zk1:99999'"),
    ],
)
@pytest.mark.parametrize("where", ["after", "before"])
def test_bad_hosts_are_one_usage_line_naming_the_problem(
    hosts: str, problem: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    option = ["--hosts", hosts]
    args = [*option, *LOCK, *COMMAND] if where == "before" else [*LOCK, *option, *COMMAND]
    line = parse_error(args, capsys)
    assert line.startswith("pycurator")
    assert "error: argument --hosts: " in line and problem in line


@pytest.mark.parametrize("value", ["", "   ", "zk1:2181,,zk2:2181"])
@pytest.mark.parametrize("command", [[*LOCK, *COMMAND], ["inspect", "/locks/x"], ["demo"]])
def test_a_set_but_empty_or_bad_hosts_variable_is_a_usage_error(
    value: str, command: list[str]
) -> None:
    result = run_cli(*command, env=cli_env(PYCURATOR_ZK_HOSTS=value))
    assert result.returncode == EXIT_USAGE, result.stderr
    line = usage_error_line(result.stderr)
    assert line.startswith("pycurator: error: $PYCURATOR_ZK_HOSTS: ")
    assert "connect string" in line and line.endswith("(unset it for the default)")


def test_hosts_are_the_option_else_the_variable_else_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = build_parser()
    monkeypatch.delenv(HOSTS_ENV, raising=False)
    assert hosts_of(parser.parse_args(["inspect", "/x"])) == DEFAULT_HOSTS == "127.0.0.1:2181"
    monkeypatch.setenv(HOSTS_ENV, " zk1:2181 , zk2:2181 ")
    assert hosts_of(parser.parse_args(["inspect", "/x"])) == "zk1:2181,zk2:2181"
    assert hosts_of(parser.parse_args(["inspect", "--hosts", "zk3", "/x"])) == "zk3"


def test_an_unreachable_server_is_named_with_its_failure(zk_server: ZooKeeperTarget) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: refused
        hosts = f"127.0.0.1:{sock.getsockname()[1]}"
        result = run_cli("inspect", "--hosts", hosts, "--connect-timeout", "1", "/locks/x")
    assert result.returncode == EXIT_UNAVAILABLE
    line = usage_error_line(result.stderr)
    refused = os.strerror(errno.ECONNREFUSED)
    assert (
        line
        == f"pycurator: error: cannot connect to ZooKeeper at {hosts} within 1s: {hosts}: {refused}"
    )


def test_an_unknown_host_is_named_with_its_failure() -> None:
    reason, hosts = unknown_host_error(), f"{UNKNOWN}:2181"
    result = run_cli("inspect", "--hosts", hosts, "--connect-timeout", "1", "/locks/x")
    assert result.returncode == EXIT_UNAVAILABLE
    line = usage_error_line(result.stderr)
    assert line.endswith(f"at {hosts} within 1s: {hosts}: {reason}")


def test_the_session_timeout_is_10_s_and_help_says_why_connect_s_is_30(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    assert parser.parse_args(["inspect", "/x"]).session_timeout == 10.0
    assert parser.parse_args(["lock", "/x"]).session_timeout == 10.0
    assert DEFAULT_SESSION_TIMEOUT == 30.0
    with pytest.raises(SystemExit) as exit_info:
        main(["lock", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "ZooKeeper session timeout in seconds (default: 10, where pycurator.connect()" in text
    assert "asks for 30: lock and elect stop their command once the connection is lost" in text
    assert "a shorter session frees a crashed holder's lock sooner" in text
