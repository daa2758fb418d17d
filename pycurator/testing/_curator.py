"""Java Curator through JPype: one JVM per process, with Debian's Curator 5.4 jars by default.

JPype is imported only when a function here is called, so :mod:`pycurator.testing` works without
it. Java objects are returned as JPype proxies (typed ``Any``); a Python thread that calls into
Java is attached to the JVM as its own Java thread, and a blocking Java call releases the GIL.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Debian's Curator jars (their manifests name ZooKeeper, Guava, SLF4J and, for service
#: discovery, Jackson) and a quiet binding.
DEFAULT_CLASSPATH = (
    "/usr/share/java/curator-recipes.jar:/usr/share/java/curator-test.jar"
    ":/usr/share/java/curator-x-discovery.jar:/usr/share/java/slf4j-nop.jar"
)
CLASSPATH_ENV = "PYCURATOR_CURATOR_CLASSPATH"
#: Curator's Java package and Maven group: the one place the kit spells it.
CURATOR = "org.apache.curator"
#: What to do when JPype is missing.
INSTALL_HINT = "pip install 'pycurator-zk[interop]' (or pip install JPype1)"

#: The folder with menagerie's and ZkLocker's jars, when not ``../shared/seed-systems``.
SEED_SYSTEMS_ENV = "PYCURATOR_SEED_SYSTEMS"
MENAGERIE_JAR = "menagerie-1.1-SNAPSHOT.jar"
ZKLOCKER_JAR = "zklocker-1.0.0.jar"
#: Debian's jars the systems need besides ZooKeeper: WriteLock, LeaderElectionSupport, the
#: log4j 1.2 that menagerie calls directly, and the Guava that ZkLocker uses.
DEBIAN_JARS = (
    "/usr/share/java/zookeeper-recipes-lock.jar",
    "/usr/share/java/zookeeper-recipes-election.jar",
    "/usr/share/java/log4j-1.2.jar",
    "/usr/share/java/guava.jar",
)
_start_lock = threading.Lock()
#: What :func:`add_classpath` added, for the end of the JVM's classpath.
_added: list[str] = []
#: Curator clients made by :func:`new_curator`, closed (if still open) by :func:`shutdown`.
_clients: list[Any] = []
_clients_lock = threading.Lock()
_closers: list[Callable[[], None]] = []
#: How many :func:`java_acquire` calls are in Java now, and its changes.
_acquiring = 0
_acquiring_changed = threading.Condition()
#: How long :func:`shutdown` waits for those calls to come back once the clients are closed.
ACQUIRE_RETURN_WAIT = 5.0


def curator_classpath() -> str:
    """The classpath the JVM starts with: ``PYCURATOR_CURATOR_CLASSPATH`` or Debian's jars."""
    return os.environ.get(CLASSPATH_ENV) or DEFAULT_CLASSPATH


def _default_seed_systems_dir() -> Path:
    """``../shared/seed-systems`` beside the checkout that holds this package."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "seed-systems"


def seed_systems_dir() -> Path:
    """The folder with menagerie's and ZkLocker's jars: ``PYCURATOR_SEED_SYSTEMS`` if set,
    else ``../shared/seed-systems`` relative to the repository's root. ``FileNotFoundError``
    naming the folder and the variable when it or a jar is missing."""
    configured = os.environ.get(SEED_SYSTEMS_ENV, "").strip()
    folder = Path(configured) if configured else _default_seed_systems_dir()
    missing = [jar for jar in (MENAGERIE_JAR, ZKLOCKER_JAR) if not (folder / jar).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the Java peers of menagerie and ZkLocker need {', '.join(missing)} in {folder}; "
            f"set {SEED_SYSTEMS_ENV} to the seed-systems folder"
        )
    return folder


def systems_classpath() -> list[str]:
    """The systems' jars that exist here, for the end of the JVM's classpath."""
    jars = [jar for jar in DEBIAN_JARS if os.path.isfile(jar)]
    with contextlib.suppress(FileNotFoundError):
        folder = seed_systems_dir()
        jars += [str(folder / MENAGERIE_JAR), str(folder / ZKLOCKER_JAR)]
    return jars


def add_classpath(*entries: str | os.PathLike[str]) -> None:
    """Put jars or class folders (a test's own compiled Java classes, a Spring Cloud jar...)
    at the end of the classpath the JVM starts with: call it before the first Java call of the
    process (a conftest's ``pytest_configure``). Once the JVM runs it cannot take more:
    ``RuntimeError`` naming the entries then, unless they are already on its classpath."""
    paths = [os.fspath(Path(entry).resolve()) for entry in entries]
    with _start_lock:
        if _jvm_running():
            import jpype

            running = str(jpype.java.lang.System.getProperty("java.class.path")).split(":")
            missing = [path for path in paths if path not in running]
            if missing:
                raise RuntimeError(
                    f"the JVM already runs: {', '.join(missing)} cannot join its classpath; "
                    "call add_classpath() before the first Java call"
                )
            return
        _added.extend(path for path in paths if path not in _added)


def start_jvm() -> None:
    """Start this process's JVM with Curator on its classpath, followed by the jars of the
    other Java lock systems that exist (:func:`systems_classpath`) and what
    :func:`add_classpath` added; a no-op once it runs.

    Raises ``ImportError`` saying how to install JPype when it is missing, and ``RuntimeError``
    naming the classpath when Curator's classes cannot be loaded.
    """
    try:
        import jpype
    except ImportError as exc:
        raise ImportError(
            f"Java Curator is driven through JPype, not installed: {INSTALL_HINT}"
        ) from exc

    with _start_lock:
        if jpype.isJVMStarted():
            return
        classpath = curator_classpath()
        entries = classpath.split(":")
        entries += [jar for jar in [*systems_classpath(), *_added] if jar not in entries]
        jpype.startJVM(
            "-Xmx512m",
            "-Xshare:auto",
            classpath=entries,
            convertStrings=False,
            interrupt=False,
        )
        # Runs before JPype's own exit hook (atexit runs the last registered first).
        atexit.register(shutdown)
        try:
            jpype.JClass(f"{CURATOR}.framework.CuratorFrameworkFactory")
        except TypeError as exc:  # JPype's "class not found"
            raise RuntimeError(f"Java Curator is not on the classpath {classpath}: {exc}") from exc


def jclass(name: str) -> Any:
    """The Java class ``name`` (the JVM is started first if needed)."""
    start_jvm()
    import jpype

    return jpype.JClass(name)


#: Where a Curator recipes jar keeps its Maven version, and a class only that jar holds.
_POM_PROPERTIES = f"META-INF/maven/{CURATOR}/curator-recipes/pom.properties"
_RECIPES_CLASS = "org/apache/curator/framework/recipes/locks/InterProcessMutex.class"


def curator_version() -> str:
    """The version of the Curator recipes the JVM loaded: from the jar's Maven properties, else
    from its manifest's ``Implementation-Version`` (jars built without Maven), else
    ``"unknown"``. Starts the JVM if needed."""
    mutex = jclass(f"{CURATOR}.framework.recipes.locks.InterProcessMutex")
    stream = mutex.class_.getClassLoader().getResourceAsStream(_POM_PROPERTIES)
    if stream is not None:
        properties = jclass("java.util.Properties")()
        try:
            properties.load(stream)
        finally:
            stream.close()
        version = properties.getProperty("version")
        if version is not None:
            return str(version)
    package = mutex.class_.getPackage()
    version = None if package is None else package.getImplementationVersion()
    return "unknown" if version is None else str(version)


def curator_at_least(version: str) -> bool:
    """Whether the JVM's Curator (:func:`curator_version`) is ``version`` (``"5.5"``,
    ``"5.8.0"``) or later; ``RuntimeError`` when its version cannot be told, so that a test
    never guesses which behaviour to expect."""
    loaded = release_of(curator_version())
    if loaded is None:
        raise RuntimeError(f"the version of Java Curator on {curator_classpath()} is unknown")
    wanted = release_of(version)
    if wanted is None:
        raise ValueError(f"not a version: {version!r}")
    return loaded >= wanted


def release_of(version: str) -> tuple[int, ...] | None:
    """The numeric release of a version string (``"5.9.0-SNAPSHOT"`` is ``(5, 9, 0)``), or
    None when it does not start with one."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return None if match is None else tuple(int(part) for part in match.group().split("."))


def classpath_curator_version(classpath: str | None = None) -> str | None:
    """The version of the Curator recipes in the first jar of ``classpath`` (default
    :func:`curator_classpath`) that holds them, read from the jar without a JVM (Maven
    properties, else the manifest's ``Implementation-Version``, else ``"unknown"``); None when
    no jar there holds them."""
    for entry in (classpath or curator_classpath()).split(":"):
        if not entry.endswith(".jar") or not os.path.isfile(entry):
            continue
        try:
            with zipfile.ZipFile(entry) as jar:
                names = set(jar.namelist())
                if _RECIPES_CLASS not in names:
                    continue
                if _POM_PROPERTIES in names:
                    found = _field(jar.read(_POM_PROPERTIES), "version", "=")
                else:
                    found = _field(jar.read("META-INF/MANIFEST.MF"), "Implementation-Version", ":")
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        return found or "unknown"
    return None


def _field(text: bytes, name: str, separator: str) -> str | None:
    for line in text.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(separator)
        if sep and key.strip() == name:
            return value.strip()
    return None


def new_curator(
    hosts: str,
    *,
    session_timeout_ms: int = 10_000,
    connection_timeout_ms: int = 10_000,
    connect_timeout: float = 30.0,
    digest: str | None = None,
) -> Any:
    """A started ``CuratorFramework`` connected to ``hosts``, its CONNECTED already told to its
    listeners (a recipe started on it does not hear it); the caller closes it.

    Retries with exponential back-off, as Curator's documentation recommends. The ensemble
    tracker is off, so a client of an ensemble in containers keeps the connect string it was given.
    With ``digest`` (``"user:password"``) the client authenticates with it and creates its nodes
    with every permission for that user alone (Curator's ``ACLProvider``).
    """
    factory = jclass(f"{CURATOR}.framework.CuratorFrameworkFactory")
    import jpype

    retry = jclass(f"{CURATOR}.retry.ExponentialBackoffRetry")(100, 10)
    builder = (
        factory.builder()
        .connectString(hosts)
        .sessionTimeoutMs(session_timeout_ms)
        .connectionTimeoutMs(connection_timeout_ms)
        .retryPolicy(retry)
        .ensembleTracker(False)
    )
    if digest is not None:
        builder = builder.authorization("digest", jpype.JArray(jpype.JByte)(digest.encode()))
        user = jclass("org.apache.zookeeper.server.auth.DigestAuthenticationProvider")
        acl = jclass("org.apache.zookeeper.data.ACL")
        perms = jclass("org.apache.zookeeper.ZooDefs").Perms
        ident = jclass("org.apache.zookeeper.data.Id")("digest", user.generateDigest(digest))
        acls = jclass("java.util.Arrays").asList([acl(perms.ALL, ident)])
        provider = jpype.JProxy(
            f"{CURATOR}.framework.api.ACLProvider",
            dict={"getDefaultAcl": lambda: acls, "getAclForPath": lambda path: acls},
        )
        builder = builder.aclProvider(provider)
    client = builder.build()
    with _clients_lock:
        _clients[:] = [c for c in _clients if str(c.getState()) != "STOPPED"]
        _clients.append(client)
    # returned once CONNECTED has been told to the client's listeners, not only once it is
    # connected: a recipe started meanwhile would hear it too, and take it for a reconnect (a
    # discovery registers its instances again, a sequential one under a second node)
    told = threading.Event()
    teller: list[Any] = []  # the Java thread that tells the client's listeners

    def changed(_client: Any, state: Any) -> None:
        if str(state.name()) == "CONNECTED":
            teller.append(jclass("java.lang.Thread").currentThread())
            told.set()

    listener = jpype.JProxy(
        f"{CURATOR}.framework.state.ConnectionStateListener", dict={"stateChanged": changed}
    )
    client.getConnectionStateListenable().addListener(listener)
    client.start()
    if not told.wait(connect_timeout):
        client.close()
        raise TimeoutError(f"Curator did not connect to {hosts} within {connect_timeout}s")
    # told to this listener is not yet told to all: Curator goes on through its listeners (a
    # concurrent map, whose walk meets one added meanwhile), so a recipe started at once could
    # still hear this CONNECTED. Its teller waits for the next change once it is done.
    end = time.monotonic() + connect_timeout
    while str(teller[0].getState()) not in ("WAITING", "TIMED_WAITING"):
        if time.monotonic() > end:
            client.close()
            raise TimeoutError(f"Curator did not finish telling its CONNECTED to {hosts}")
        time.sleep(0.001)
    client.getConnectionStateListenable().removeListener(listener)
    return client


@contextmanager
def curator_client(hosts: str, **options: Any) -> Iterator[Any]:
    """``with curator_client(hosts) as client:`` a started Curator client, closed on exit."""
    client = new_curator(hosts, **options)
    try:
        yield client
    finally:
        client.close()


def java_acquire(lock: Any, timeout: float | None = None) -> bool:
    """Call a Curator lock's ``acquire()`` (no timeout) or ``acquire(ms, MILLISECONDS)``.

    The call is counted while it runs: :func:`shutdown` closes the Curator clients, which
    ends it with an error, and waits for it to come back before the JVM goes (a thread still
    turning Java's error into Python's as the JVM shuts down crashes the process)."""
    global _acquiring
    with _acquiring_changed:
        _acquiring += 1
    try:
        if timeout is None:
            lock.acquire()
            return True
        unit = jclass("java.util.concurrent.TimeUnit")
        return bool(lock.acquire(int(timeout * 1000), unit.MILLISECONDS))
    finally:
        with _acquiring_changed:
            _acquiring -= 1
            _acquiring_changed.notify_all()


def session_of(client: Any) -> tuple[int, bytes]:
    """The session id and password of a Curator client's current ZooKeeper session."""
    zookeeper = client.getZookeeperClient().getZooKeeper()
    return int(zookeeper.getSessionId()), bytes(zookeeper.getSessionPasswd())


def java_nano_time() -> int:
    """Java's ``System.nanoTime()``: on Linux, the clock of Python's ``time.monotonic_ns()``."""
    return int(jclass("java.lang.System").nanoTime())


def close_curators() -> None:
    """Close every Curator client :func:`new_curator` made that is still open (closing one
    twice is harmless), so that no Curator thread calls back into Python any more."""
    with _clients_lock:
        clients, _clients[:] = list(_clients), []
    for client in reversed(clients):
        with contextlib.suppress(Exception):  # one failed close must not keep the rest open
            client.close()


def close_on_shutdown(close: Callable[[], None]) -> None:
    """Have :func:`shutdown` call ``close`` (which must not raise) before it closes Curator's
    clients: the Java peers of the other systems register theirs as their module loads."""
    _closers.append(close)


def shutdown() -> None:
    """Tear down what this kit opened, in a safe order, then shut the JVM down.

    The other systems' Java peers and Curator clients first (their threads call listeners,
    watchers and other Python proxies; menagerie's session managers own non-daemon threads),
    then fault proxies, then local ZooKeeper servers and ensembles, and last the JVM, whose
    shutdown must not meet a Java thread running into Python while Python finalizes. Called at
    interpreter exit once :func:`start_jvm` has started the JVM, and at the end of a pytest
    session; call it from the main thread. Safe to call again; the JVM cannot be started again
    in this process afterwards.
    """
    from ._ensemble import close_all_ensembles
    from ._proxy import close_all_proxies
    from ._server import close_all_servers

    try:
        if _jvm_running():
            for close in reversed(_closers):
                close()
            close_curators()
            with _acquiring_changed:  # closed clients end the waits: let them come back
                _acquiring_changed.wait_for(lambda: _acquiring == 0, ACQUIRE_RETURN_WAIT)
        close_all_proxies()
        close_all_servers()
        close_all_ensembles()
    finally:
        if _jvm_running():
            import jpype

            jpype.shutdownJVM()


def _jvm_running() -> bool:
    jpype = sys.modules.get("jpype")
    return jpype is not None and bool(jpype.isJVMStarted())
