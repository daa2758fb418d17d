"""Which kazoo releases pycurator relies on, and the one rule about them, which the runtime, the
connection loop, ``connect()``'s choice of handler and the tests all read: a kazoo is checked
when its minor release is one of :data:`CHECKED` (every use of kazoo's insides in this package,
and the fast handler's reliance on how kazoo's connection uses a handler, read the same in each
of its patch releases). ``pyproject.toml`` declares exactly that range (``kazoo>=2.11,<2.12``),
and ``tests/test_kazoo_private.py`` holds the two together; ``./dev kazoo`` runs the library's
tests on the lowest release of the range and the newest of each minor release in it.

On a kazoo outside it (installed anyway, with ``--no-deps``), pycurator says so once in its log
(:func:`told_if_unchecked`, when a client's runtime is first made), serves clients with kazoo's
own connection loop, and ``connect()`` gives them kazoo's own threading handler: the parts that
have a fallback use it, and what has none (reading a client's session and stop, dropping one
watcher) is used as checked here. kazoo 2.9 and 2.10 read the same but for ``NoWatcherError``
(see :func:`~pycurator._client.kazoo_internals.reads_error`).
"""

from __future__ import annotations

import logging
from importlib.metadata import version

#: The minor releases of kazoo pycurator is checked against (``major.minor``).
CHECKED = ("2.11",)
#: The kazoo installed.
INSTALLED = version("kazoo")

_told = False  # whether an unchecked kazoo was said in the log (once a process)


def release(text: str) -> tuple[int, ...]:
    """The minor release of a kazoo version, ``(major, minor)``."""
    return tuple(int(part) for part in text.split(".")[:2])


def checked(installed: str | None = None) -> bool:
    """Whether a kazoo version (the installed one by default) is of a :data:`CHECKED` minor
    release."""
    return release(installed or INSTALLED) in {release(minor) for minor in CHECKED}


def declared_range() -> str:
    """The requirement that says what is checked: from the lowest :data:`CHECKED` minor release
    to the one after the highest (``kazoo>=2.11,<2.12``)."""
    releases = sorted(release(minor) for minor in CHECKED)
    (low_major, low_minor), (high_major, high_minor) = releases[0], releases[-1]
    return f"kazoo>={low_major}.{low_minor},<{high_major}.{high_minor + 1}"


def unchecked() -> str | None:
    """Why the installed kazoo is not one pycurator is checked against, or None when it is."""
    if checked():
        return None
    return (
        f"kazoo {INSTALLED} is not of a release pycurator is checked against ({declared_range()})"
    )


def told_if_unchecked() -> None:
    """Say once in the ``pycurator`` log that the installed kazoo is unchecked, if it is."""
    global _told
    why = unchecked()
    if why is None or _told:
        return
    _told = True
    logging.getLogger("pycurator").warning(
        "%s: kazoo's own connection loop and handler serve instead of pycurator's, and what "
        "pycurator reads of kazoo's clients is read as in the releases it is checked against",
        why,
    )


__all__ = [
    "CHECKED",
    "INSTALLED",
    "checked",
    "declared_range",
    "release",
    "told_if_unchecked",
    "unchecked",
]
