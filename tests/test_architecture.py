"""The architecture page (docs/architecture.md) is true: it lists every module of the package
once, under its layer, lists no module that does not exist, and the imports keep to its rules."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import pycurator

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
#: The layers that make the core, as the page's headings name them.
CORE = (
    "Protocol: pure rules",
    "Protocol: steps and their runners",
    "Transport: kazoo, and what pycurator keeps per client",
    "Recipes: each protocol written once",
)
SHARED = "Cores: what both front ends share"
THREADED = "Front ends: the threaded shells"
ASYNCIO = "Front ends: the asyncio shells"
#: What the core never imports: the optional handler and everything built on the core.
NOT_FOR_THE_CORE = (
    "pycurator.handlers",
    "pycurator._handler_sockets",
    "pycurator.aio",
    "pycurator.cli",
    "pycurator.testing",
)
#: Where the modules of each layer live (the public modules of the other Java systems,
#: pycurator.menagerie and its kin, are entry points that re-export the threaded shells).
HOMES = {
    CORE[0]: ("pycurator/_protocol/",),
    CORE[1]: (
        "pycurator/_protocol/",
        "pycurator/_client/callback_runner.py",
        "pycurator/_threads/runner.py",
        "pycurator/aio/_runner.py",
    ),
    CORE[2]: ("pycurator/_client/",),
    CORE[3]: ("pycurator/_recipes/",),
    SHARED: ("pycurator/_cores/",),
    THREADED: ("pycurator/_threads/",),
    ASYNCIO: ("pycurator/aio/",),
}
#: The public modules that re-export the threaded shells (entry points, above both front ends).
THREADED_PUBLIC = ("pycurator.zkrecipes", "pycurator.zklocker", "pycurator.menagerie")
#: The layers' packages, each above the ones before it: none imports a later one.
PACKAGES = ("pycurator._protocol", "pycurator._client", "pycurator._recipes", "pycurator._cores")


def layers() -> dict[str, list[str]]:
    """The page's modules (paths from the checkout's root), by the heading they are under."""
    found: dict[str, list[str]] = {}
    heading = ""
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        elif match := re.match(r"- `(pycurator/[\w/]+\.py)`: \S", line):
            found.setdefault(heading, []).append(match.group(1))
    return found


def module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def imports_of(path: str, *, at_run_time: bool = False) -> set[str]:
    """The modules ``path`` imports, absolute, whether at the top or inside a function; with
    ``at_run_time``, less those imported only for type checking (under ``if TYPE_CHECKING:``)."""
    name = module_name(path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if at_run_time and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = node.module or ""
            absolute = (f"{base}.{module}" if module else base) if node.level else module
            if module:  # "from . import x" imports x, not the package's own __init__
                found.add(absolute)
            found.update(f"{absolute}.{alias.name}" for alias in node.names)
    return found


def test_the_page_lists_every_module_of_the_package_once_and_nothing_else() -> None:
    listed = [path for paths in layers().values() for path in paths]
    on_disk = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "pycurator").rglob("*.py"))
    assert sorted(set(listed)) == on_disk, "docs/architecture.md and pycurator/ differ"
    twice = sorted({path for path in listed if listed.count(path) > 1})
    assert not twice, f"listed more than once: {twice}"


def test_the_page_has_each_layer_it_names() -> None:
    assert set(CORE) | {SHARED, THREADED, ASYNCIO} <= set(layers())


@pytest.mark.parametrize("layer", list(HOMES))
def test_each_layer_lives_in_its_own_package(layer: str) -> None:
    strays = [path for path in layers().get(layer, []) if not path.startswith(HOMES[layer])]
    assert not strays, f"{layer}: {strays} live outside {HOMES[layer]}"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_layers_package_imports_no_package_above_it(package: str) -> None:
    shells = ("pycurator._threads", *THREADED_PUBLIC)
    above = (*PACKAGES[PACKAGES.index(package) + 1 :], *shells, *NOT_FOR_THE_CORE)
    folder = ROOT / package.replace(".", "/")
    wrong = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in folder.glob("*.py")
        for module in imports_of(str(path.relative_to(ROOT)))
        if module.startswith(tuple(f"{name}." for name in above)) or module in above
    )
    assert not wrong


@pytest.mark.parametrize(
    "path", [path for layer in CORE for path in layers().get(layer, [])], ids=lambda p: p
)
def test_the_core_imports_no_recipe_front_end_entry_point_or_optional_part(path: str) -> None:
    above = {module_name(p) for layer in (THREADED, ASYNCIO) for p in layers().get(layer, [])}
    above |= {"pycurator", *THREADED_PUBLIC, "pycurator._connect", "pycurator.demo"}
    optional = tuple(f"{name}." for name in NOT_FOR_THE_CORE)
    wrong = sorted(
        module
        for module in imports_of(path)
        if module in above or module in NOT_FOR_THE_CORE or module.startswith(optional)
    )
    assert not wrong, f"{path} imports {wrong}"


@pytest.mark.parametrize(
    "path",
    [p for layer in (SHARED, THREADED, ASYNCIO) for p in layers().get(layer, [])],
    ids=lambda p: p,
)
def test_the_recipes_import_no_optional_part_and_the_cores_no_front_end(path: str) -> None:
    own = ("pycurator.aio",) if path.startswith("pycurator/aio/") else ()
    optional = tuple(name for name in NOT_FOR_THE_CORE if name not in own)
    shells: set[str] = set()
    if path in layers().get(SHARED, []):
        shells = {module_name(p) for p in layers()[THREADED] + layers()[ASYNCIO]}
    wrong = sorted(
        module
        for module in imports_of(path)
        if module in optional
        or module.startswith(tuple(f"{name}." for name in optional))
        or module in shells
    )
    assert not wrong, f"{path} imports {wrong}"


def foreign_private_members(path: str) -> list[str]:
    """The underscored attributes ``path`` reads or calls that it does not define itself (an
    attribute set on ``self``, a method, a class attribute) and that are not modules it
    imports: another module's insides."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    defined: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            else:
                used.add(node.attr)
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            defined.update(alias.asname or alias.name for alias in node.names)
            defined.update((node.module or "").split("."))
    return sorted(name for name in used - defined if not name.startswith("__"))


@pytest.mark.parametrize("path", layers().get(ASYNCIO, []), ids=lambda p: p)
def test_no_asyncio_module_uses_another_modules_underscored_members(path: str) -> None:
    assert not foreign_private_members(path)


@pytest.mark.parametrize("front", [THREADED, ASYNCIO])
def test_the_front_ends_never_import_each_other(front: str) -> None:
    """Neither front end imports the other's modules, nor the entry points that name the other
    (``pycurator`` and the threaded shells' public modules): what both need comes from below,
    so either could go, or a third come, without touching the other."""
    if front == THREADED:
        other: tuple[str, ...] = ("pycurator.aio",)
    else:
        other = ("pycurator._threads", *THREADED_PUBLIC)
    public = {f"pycurator.{name}" for name in pycurator.__all__} | {"pycurator"}

    def of_the_other(module: str) -> bool:
        if front == ASYNCIO and module in public:  # the package's own names: threaded ones
            return True
        return module in other or module.startswith(tuple(f"{name}." for name in other))

    wrong = sorted(
        f"{path} imports {module}"
        for path in layers().get(front, [])
        for module in imports_of(path)
        if of_the_other(module)
    )
    assert not wrong


@pytest.mark.parametrize("front", [THREADED, ASYNCIO])
def test_no_class_of_a_front_end_is_built_on_a_class_of_the_other(front: str) -> None:
    other = THREADED if front == ASYNCIO else ASYNCIO
    theirs = {module_name(path) for path in layers().get(other, [])}
    wrong = []
    for path in layers().get(front, []):
        module = importlib.import_module(module_name(path))
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue  # imported, judged where it is defined
            wrong += [
                f"{module.__name__}.{name} < {base.__module__}.{base.__qualname__}"
                for base in cls.__mro__[1:]
                if base.__module__ in theirs
            ]
    assert not wrong


def test_no_module_of_the_core_or_the_recipes_imports_one_that_imports_it_back() -> None:
    paths = [p for layer in (*CORE, SHARED, THREADED, ASYNCIO) for p in layers().get(layer, [])]
    modules = {module_name(path): path for path in paths}
    graph = {
        name: {m for m in imports_of(path) if m in modules and m != name}
        for name, path in modules.items()
    }

    def reaches(start: str, goal: str) -> bool:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return False

    circles = sorted(f"{a} <-> {b}" for a in graph for b in graph[a] if a < b and reaches(b, a))
    assert not circles


#: What the protocol may take from kazoo: its words (errors, states, events), none of its I/O.
KAZOO_WORDS = ("kazoo.exceptions", "kazoo.protocol.states")
#: Modules that do I/O, wait on threads or run event loops: none is the protocol's.
DOES_IO = ("socket", "select", "selectors", "ssl", "threading", "asyncio", "queue", "subprocess")


@pytest.mark.parametrize(
    "path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pycurator/_protocol").glob("*.py"))
)
def test_the_protocol_imports_nothing_that_does_io(path: str) -> None:
    wrong = sorted(
        module
        for module in imports_of(path)
        if (module.partition(".")[0] == "kazoo" and not module.startswith(KAZOO_WORDS))
        or module.partition(".")[0] in DOES_IO
    )
    assert not wrong, f"{path} imports {wrong}"


#: What sending a request takes: the requests, and the steps that send and await them.
SENDS = (
    "pycurator._protocol.requests",
    "pycurator._protocol.steps.Send",
    "pycurator._protocol.steps.Await",
)


@pytest.mark.parametrize("path", layers().get(SHARED, []), ids=lambda p: p)
def test_the_cores_send_no_request_every_protocol_is_the_recipes(path: str) -> None:
    wrong = sorted(
        module
        for module in imports_of(path)
        if module in SENDS or module.startswith(f"{SENDS[0]}.")
    )
    assert not wrong, f"{path} imports {wrong}: a protocol, which belongs in pycurator._recipes"


#: A kazoo client's requests and session, by the names only its client has: what the recipes and
#: the recipes' cores ask of the server goes through the transport, as steps.
CLIENT_CALLS = {
    "get_children",
    "exists",
    "transaction",
    "ensure_path",
    "create",
    "delete",
    "sync",
    "retry",
    "client_id",
    *(f"{name}_async" for name in ("get", "get_children", "exists", "set", "create", "delete")),
}
#: What a kazoo client shares with other objects (an event's ``set``, a dict's ``get``): a call
#: of these counts on something named ``client``.
CLIENT_ONLY_CALLS = {"get", "set"}


def client_calls(path: str) -> list[str]:
    """The kazoo client requests ``path`` makes (``line: name``): calls, and reads of its
    session."""
    found = []
    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, receiver = node.func.attr, node.func.value
        elif isinstance(node, ast.Attribute) and node.attr == "client_id":
            name, receiver = node.attr, node.value
        else:
            continue
        named = (
            receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
        )
        if name in CLIENT_CALLS or (name in CLIENT_ONLY_CALLS and named == "client"):
            found.append(f"{node.lineno}: {name}")
    return found


@pytest.mark.parametrize(
    "path", [p for layer in (CORE[3], SHARED) for p in layers().get(layer, [])], ids=lambda p: p
)
def test_the_recipes_and_the_cores_make_no_request_of_a_kazoo_client(path: str) -> None:
    wrong = client_calls(path)
    assert not wrong, f"{path} calls a kazoo client: {wrong}; send through the transport instead"


@pytest.mark.parametrize(
    "path", [p for layer in (CORE[3], SHARED) for p in layers().get(layer, [])], ids=lambda p: p
)
def test_the_recipes_and_the_cores_know_a_client_by_its_transport_alone(path: str) -> None:
    """Nothing of ``pycurator._client`` (its transport, runners, runtime, kazoo's insides),
    not even to name a type: the typed ``Transport`` of ``pycurator._protocol.transport`` is
    the one seam, which a scripted server and the explorer's model stand in for."""
    wrong = sorted(m for m in imports_of(path) if m.startswith("pycurator._client"))
    assert not wrong, f"{path} imports {wrong}: take a Transport"


def test_the_transport_on_kazoo_has_every_member_of_the_seam() -> None:
    from pycurator._client.transport import KazooTransport
    from pycurator._protocol.transport import Transport

    members = {
        name
        for name in vars(Transport)
        if (not name.startswith("_") and callable(getattr(Transport, name, None)))
        or isinstance(vars(Transport)[name], property)
    }
    assert members and not {name for name in members if not hasattr(KazooTransport, name)}


#: What takes a kazoo client itself (its handler, its private state, its runtime by the client):
#: the recipes and the cores have all of it through their transport instead.
OF_THE_CLIENT = (
    "kazoo.client",
    "pycurator._client.kazoo_internals",
    "pycurator._client.runtime.runtime_of",
    "pycurator._client.runtime.services_of",
)


@pytest.mark.parametrize(
    "path", [p for layer in (CORE[3], SHARED) for p in layers().get(layer, [])], ids=lambda p: p
)
def test_the_recipes_and_the_cores_take_a_transport_not_a_kazoo_client(path: str) -> None:
    """They hold a transport (``pycurator._client.transport.transport_of``), which a front end
    makes from the user's client: they import no kazoo client but to name its type for
    checking (a recipe's ``client`` property returns the transport's), nothing that takes a
    client, and read nothing of one (``client.handler``, ``self.client.chroot``...)."""
    imported = imports_of(path, at_run_time=True)
    wrong = sorted(m for m in imported if m.startswith(OF_THE_CLIENT))
    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            owner = node.value
            named = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if named == "client":
                wrong.append(f"{node.lineno}: {ast.unparse(node)}")
    assert not wrong, f"{path} reaches a kazoo client: {wrong}; go through the transport"


#: What a pending answer does (kazoo's async result): the runners' business, not a protocol's.
PENDING_CALLS = {"rawlink", "unlink", "ready", "get_nowait", "successful"}


@pytest.mark.parametrize(
    "path",
    sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "pycurator/_protocol").glob("*.py")
        if p.name != "steps.py"  # the vocabulary, with what every runner does of a step
    ),
)
def test_the_protocol_never_touches_a_pending_answer(path: str) -> None:
    """Waiting for answers (:class:`~pycurator._protocol.steps.AwaitAll`), reading them and
    reacting to a late one (:class:`~pycurator._protocol.steps.OnAnswer`) are steps: a
    protocol only yields them."""
    wrong = [
        f"{node.lineno}: {node.func.attr}"
        for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in PENDING_CALLS
    ]
    assert not wrong, f"{path} calls a pending answer: {wrong}; yield a step instead"


#: The one module of the library that reads the system's clock (see its doc).
CLOCK = "pycurator/_protocol/clock.py"
#: The parts of the package outside the library, which keep real time whatever the library's
#: clock says: the command line (a program: its deadlines are its user's wall-clock waits, and
#: it prints nodes' ages against the wall clock), the test kit (real servers and processes in
#: real time), the listeners for other libraries (spans carry wall-clock timestamps) and the demo.
OWN_TIME = ("pycurator/cli/", "pycurator/testing/", "pycurator/contrib/", "pycurator/demo.py")
#: What reads the time: ``time``'s clocks (and ``datetime``'s now).
CLOCK_READS = frozenset(
    {"monotonic", "monotonic_ns", "time", "time_ns", "perf_counter", "perf_counter_ns", "now"}
)


def time_reads(source: str) -> list[str]:
    """Where ``source`` reads a clock of ``time`` or ``datetime`` itself (by any name it gives
    those modules, or by importing their clocks)."""
    tree = ast.parse(source)
    modules = {"time", "datetime"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(
                a.asname for a in node.names if a.name in ("time", "datetime") and a.asname
            )
    found = [
        f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module in ("time", "datetime")
        and any(alias.name in CLOCK_READS | {"datetime"} for alias in node.names)
    ]
    found += [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in CLOCK_READS
        and ast.unparse(node.value).split(".")[0] in modules
    ]
    return found


def library_modules() -> list[str]:
    return sorted(
        path
        for path in (str(p.relative_to(ROOT)) for p in (ROOT / "pycurator").rglob("*.py"))
        if path != CLOCK and not path.startswith(OWN_TIME)
    )


@pytest.mark.parametrize("path", library_modules(), ids=lambda p: p)
def test_the_library_reads_the_time_through_its_one_clock(path: str) -> None:
    """Every module of the library reads the time through ``pycurator._protocol.clock``, so
    that a clock injected there (the fault explorer's simulated time) is the one every
    deadline, timer and report keeps."""
    wrong = time_reads((ROOT / path).read_text(encoding="utf-8"))
    assert not wrong, f"{path} reads the time itself: {wrong}; read clock.monotonic()"


@pytest.mark.parametrize(
    "source",
    [
        "import time\nnow = time.monotonic()\n",
        "import time as t\nnow = t.time()\n",
        "from time import monotonic\n",
        "import datetime\nnow = datetime.datetime.now()\n",
        "from datetime import datetime\n",
    ],
)
def test_the_clock_rule_sees_each_way_of_reading_the_time(source: str) -> None:
    assert time_reads(source)


def test_the_clock_rule_lets_the_clock_and_other_uses_of_time_be() -> None:
    assert not time_reads("from .._protocol import clock\nnow = clock.monotonic()\n")
    assert not time_reads("import time\ntime.sleep(0)\n")
