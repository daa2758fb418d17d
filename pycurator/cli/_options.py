"""The options several of the ``pycurator`` command's commands take."""

from __future__ import annotations

import argparse

from .._connect import DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT
from ._common import (
    CONNECT_SECONDS,
    DEFAULT_HOSTS,
    HOSTS_ENV,
    SESSION_SECONDS,
    SESSION_TIMEOUT,
    connect_string,
)
from ._register import BASE_PATH


def global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes, before its name or after it. Only the top-level parser
    has defaults: a command's parser sets an option only where it is given (after the command's
    name, it wins over the same option before it)."""

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default(False),
        help="log what kazoo and the recipes do",
    )
    parser.add_argument(
        "--hosts",
        type=connect_string,
        default=default(None),
        metavar="HOSTS",
        help=(
            "ZooKeeper connect string, host:port,...[/chroot] (default: "
            f"${HOSTS_ENV} if set, an empty one refused; else {DEFAULT_HOSTS})"
        ),
    )
    parser.add_argument(
        "--connect-timeout",
        type=CONNECT_SECONDS,
        default=default(DEFAULT_CONNECT_TIMEOUT),
        metavar="S",
        help=f"seconds to wait for a connection (default: {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--session-timeout",
        type=SESSION_SECONDS,
        default=default(SESSION_TIMEOUT),
        metavar="S",
        help=(
            f"ZooKeeper session timeout in seconds (default: {SESSION_TIMEOUT:g}, where "
            f"pycurator.connect() asks for {DEFAULT_SESSION_TIMEOUT:g}: lock and elect stop "
            "their command once the connection is lost anyway, and a shorter session frees a "
            "crashed holder's lock sooner)"
        ),
    )


def force_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help=(
            f"{what} even where PATH holds another recipe's or system's nodes (refused without "
            "it: the two would not exclude each other)"
        ),
    )


def quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line while waiting (there is none unless stderr is a terminal)",
    )


def base_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base",
        default=BASE_PATH,
        metavar="PATH",
        help=f"the discovery's base path (default: {BASE_PATH}, Spring Cloud's and Dubbo's)",
    )


__all__ = ["base_option", "force_option", "global_options", "quiet_option"]
