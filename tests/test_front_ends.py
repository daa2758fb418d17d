"""The front ends cannot drift: every front end offers the same public classes as the threaded
one, with the same members and parameters (``async`` aside) and the same property docs, and no
shell holds behaviour: a shell method delegates to a core and says how it waits, with no loop,
``try`` or comprehension but in the few places listed here, each saying how it waits.

A third front end (trio, anyio) is one more entry in :data:`FRONT_ENDS`, and these checks hold
it to the same surface as the first two (see docs/architecture.md, "Why a shape test").
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from types import ModuleType
from typing import Any

import pytest

from .test_architecture import ASYNCIO, ROOT, THREADED, layers

#: Each front end: its public modules, in the order of the threaded ones they mirror, and the
#: layer (a heading of docs/architecture.md) that lists its shells.
FRONT_ENDS: dict[str, tuple[tuple[str, ...], str]] = {
    "threaded": (
        (
            "pycurator",
            "pycurator.menagerie",
            "pycurator.zklocker",
            "pycurator.zkrecipes",
            "pycurator.discovery",
        ),
        THREADED,
    ),
    "asyncio": (
        (
            "pycurator.aio",
            "pycurator.aio.menagerie",
            "pycurator.aio.zklocker",
            "pycurator.aio.zkrecipes",
            "pycurator.aio.discovery",
        ),
        ASYNCIO,
    ),
}
REFERENCE = "threaded"
OTHERS = [name for name in FRONT_ENDS if name != REFERENCE]
#: Public names one front end's modules have and the threaded ones do not, and why.
ONLY_THERE = {
    # the asyncio package names the read/write lock's sides, which pycurator leaves to
    # pycurator.menagerie's re-export; and awaits a guarded transaction's commit
    ("asyncio", "pycurator.aio"): {"ReadLock", "WriteLock", "commit"},
}
#: Public names of the threaded modules a front end need not have, and why: the package's
#: entry points and errors, which are no recipe; and the latch listener's protocol, whose
#: methods an asyncio listener may write as coroutines.
NOT_RECIPES = {
    "CompressedDataError",
    "ConnectTimeout",
    "ConnectionPolicy",
    "CorruptedDataError",
    "IllegalTrySetVersionError",
    "LeaderLatchListener",
    "LockEvent",
    "LockEventKind",
    "LockListener",
    "LockLostError",
    "LockNotOwnedError",
    "LockReleaseError",
    "LockTimeout",
    "NotALockNodeError",
    "PyCuratorError",
    "ServerFeatureError",
    "TLSOptions",
    "UnknownOutcomeError",
    "add_lock_listener",
    "attempt_revoke",
    "connect",
    "reconnecting_retry",
    "remove_lock_listener",
}
#: Members only a front end's class has, and why: a task owns an asyncio hold (the threaded
#: name, is_owned_by_current_thread, stays as its alias for code written for both).
ONLY_MEMBERS = {"asyncio": {"is_owned_by_current_task"}}
#: Public classes a recipe makes for its user (never the user), each front end's with what
#: its waits need, so their constructors may differ.
MADE_INSIDE = {"Leadership"}
#: The words in which front ends differ and nothing else: who holds (a thread, a task).
VOCABULARY = {"asyncio": {"task": "thread", "tasks": "threads"}}
#: The shells' functions that may loop, try or iterate, each because it is how its front end
#: waits or runs what the cores give it; anything else in a shell is behaviour, for a core.
WAITING = {
    "pycurator/_threads/cache.py": {
        "CacheEvents.__next__": "waits for the next event, a handler event per wait",
    },
    "pycurator/_threads/lock.py": {
        "LockContext.hold": "releases at the end of a with block",
    },
    "pycurator/_threads/selector.py": {
        "LeaderSelector._run_lead": "runs the user's lead in a thread, telling its end",
    },
    "pycurator/_threads/semaphore.py": {
        "InterProcessSemaphoreV2.acquire_many": "wraps each lease the steps give",
        "InterProcessSemaphoreV2.return_all": "closes each lease, blocking",
    },
    "pycurator/aio/_discovery.py": {
        "ServiceDiscovery.close": "unregisters even when cancelled as its caches close",
    },
    "pycurator/aio/_lock.py": {
        "calling_task": "asks asyncio for the task making the call, if any",
        "AsyncLockContext.hold": "releases at the end of an async with block",
        "AsyncLossNotice.bound": "binds the callbacks so far to the running loop",
        "AsyncReentrantLock._acquire": "re-enters after the owner task's acquire under way",
    },
    "pycurator/aio/_multilock.py": {
        "_drive": "answers a multi-lock's asks by awaiting its members, for the calling task",
    },
    "pycurator/aio/_selector.py": {
        "LeaderSelector._run_lead": "runs the user's lead as a task, telling its end",
    },
    "pycurator/aio/_semaphore.py": {
        "InterProcessSemaphoreV2.acquire_many": "wraps each lease the steps give",
        "InterProcessSemaphoreV2.return_all": "closes each lease, awaiting",
    },
}
BEHAVIOUR = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def public_classes(front: str) -> dict[tuple[int, str], type]:
    """The front end's public classes, by (which public module, name)."""
    found = {}
    for index, name in enumerate(FRONT_ENDS[front][0]):
        module = importlib.import_module(name)
        for member in module.__all__:
            value = getattr(module, member)
            if isinstance(value, type) and member not in NOT_RECIPES:
                found[index, member] = value
    return found


def public_names(module: ModuleType) -> set[str]:
    return set(module.__all__) - NOT_RECIPES


@pytest.mark.parametrize("front", OTHERS)
def test_each_front_end_has_the_public_names_of_the_threaded_one(front: str) -> None:
    for mine, theirs in zip(FRONT_ENDS[REFERENCE][0], FRONT_ENDS[front][0], strict=True):
        expected = public_names(importlib.import_module(mine))
        expected |= ONLY_THERE.get((front, theirs), set())
        assert public_names(importlib.import_module(theirs)) == expected, theirs


def members(cls: type) -> dict[str, Any]:
    """A class's public members, as found on the class (properties as properties), and its
    constructor unless :data:`MADE_INSIDE`."""
    found = {
        name: inspect.getattr_static(cls, name)
        for name in dir(cls)
        if not name.startswith("_") or (name == "__init__" and cls.__name__ not in MADE_INSIDE)
    }
    return found | {name: None for name in instance_attributes(cls) if name not in found}


def instance_attributes(cls: type) -> set[str]:
    """The public attributes the class's methods (its own and its bases') set on ``self``."""
    found = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("pycurator."):
            continue
        for node in ast.walk(ast.parse(inspect.getsource(klass).strip())):
            targets: list[ast.expr] = [node.target] if isinstance(node, ast.AnnAssign) else []
            targets += node.targets if isinstance(node, ast.Assign) else []
            found |= {
                target.attr
                for target in targets
                if isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and not target.attr.startswith("_")
            }
    return found


def pairs(front: str) -> list[tuple[str, type, type]]:
    reference, other = public_classes(REFERENCE), public_classes(front)
    return [(f"{cls.__name__}", cls, other[key]) for key, cls in reference.items() if key in other]


@pytest.mark.parametrize("front", OTHERS)
def test_each_class_has_the_same_members_in_every_front_end(front: str) -> None:
    differ = []
    for name, mine, theirs in pairs(front):
        left, right = set(members(mine)), set(members(theirs))
        if left - right or right - left - ONLY_MEMBERS.get(front, set()):
            differ.append(f"{name}: {sorted(left ^ right)}")
    assert differ == []


def is_data(member: Any) -> bool:
    """A property, or an attribute, rather than a method."""
    return isinstance(member, property) or not callable(callable_of(member))


def callable_of(member: Any) -> Any:
    return member.__func__ if isinstance(member, staticmethod | classmethod) else member


@pytest.mark.parametrize("front", OTHERS)
def test_each_method_takes_the_same_parameters_with_the_same_defaults(front: str) -> None:
    differ = []
    for name, mine, theirs in pairs(front):
        left, right = members(mine), members(theirs)
        for member in sorted(set(left) & set(right)):
            a, b = callable_of(left[member]), callable_of(right[member])
            if is_data(a) != is_data(b):
                differ.append(f"{name}.{member}: a method on one side only")
            elif inspect.isfunction(a) and inspect.isfunction(b):
                params = [
                    (p.name, p.kind, p.default) for p in inspect.signature(a).parameters.values()
                ]
                others = [
                    (p.name, p.kind, p.default) for p in inspect.signature(b).parameters.values()
                ]
                if params != others:
                    differ.append(f"{name}.{member}: {params} != {others}")
    assert differ == []


def in_reference_words(front: str, doc: str | None) -> str:
    words = VOCABULARY.get(front, {})
    return re.sub(r"\b\w+\b", lambda m: words.get(m.group(0), m.group(0)), doc or "")


@pytest.mark.parametrize("front", OTHERS)
def test_a_property_says_the_same_in_every_front_end(front: str) -> None:
    """A property is the same value whatever waits, so its doc agrees (but for the owner's
    name: thread or task)."""
    differ = []
    for name, mine, theirs in pairs(front):
        left, right = members(mine), members(theirs)
        for member in sorted(set(left) & set(right)):
            a, b = left[member], right[member]
            both = isinstance(a, property) and isinstance(b, property)
            if both and inspect.getdoc(a) != in_reference_words(front, inspect.getdoc(b)):
                differ.append(f"{name}.{member}")
    assert differ == []


def loops_and_tries(path: str) -> dict[str, str]:
    """The functions of ``path`` (``Class.method`` or ``function``) whose own body loops, tries
    or iterates, with the first such statement's kind."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    found: dict[str, str] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                kinds = [
                    type(n).__name__
                    for statement in node.body
                    for n in ast.walk(statement)
                    if isinstance(n, BEHAVIOUR)
                ]
                if kinds:
                    found[f"{prefix}{node.name}"] = kinds[0]

    visit(tree.body, "")
    return found


def shells() -> list[str]:
    return [path for _, layer in FRONT_ENDS.values() for path in layers().get(layer, [])]


@pytest.mark.parametrize("path", shells(), ids=lambda p: p)
def test_a_shell_holds_no_behaviour_but_its_waiting(path: str) -> None:
    allowed = WAITING.get(path, {})
    found = loops_and_tries(path)
    assert {name: kind for name, kind in found.items() if name not in allowed} == {}
    assert sorted(set(allowed) - set(found)) == [], "listed as waiting, but no longer loops"


def test_every_file_listed_as_waiting_is_a_shell() -> None:
    assert set(WAITING) <= set(shells())
