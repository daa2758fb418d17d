"""Fencing tokens grow across Java Curator and pycurator holders of one lock."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.testing import java_acquire
from tests.support import SOON, children

from .conftest import java_class


def test_tokens_of_successive_java_and_python_holders_strictly_increase(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    java = java_class("InterProcessMutex")(curator, path)
    python = InterProcessMutex(zk, path)
    tokens: list[tuple[str, int]] = []
    for _ in range(3):
        assert java_acquire(java, SOON)
        try:
            # a Java holder's token is its node's czxid, as pycurator's is
            (name,) = children(zk, path)
            tokens.append(("java", zk.exists(f"{path}/{name}").czxid))
        finally:
            java.release()
        with python:
            assert python.lock_path is not None
            assert python.fencing_token == zk.exists(python.lock_path).czxid
            tokens.append(("python", python.fencing_token))
    values = [token for _, token in tokens]
    assert values == sorted(set(values))
