"""pycurator's exceptions cross process boundaries: a multiprocessing pool or a task queue
pickles them, and the copy keeps its type, message and fields."""

from __future__ import annotations

import pickle

import pytest

from pycurator import (
    ConnectTimeout,
    LockLostError,
    LockNotOwnedError,
    LockReleaseError,
    LockTimeout,
    NotALockNodeError,
    PyCuratorError,
)
from pycurator.discovery import (
    InstanceFormatError,
    InvalidServiceInstance,
    InvalidUriSpec,
    PayloadTypeError,
    ServiceNotRegisteredError,
)

ERRORS = [
    ConnectTimeout("zk1:2181,zk2:2181/app", 15.0),
    LockTimeout("/locks/a", 2.5),
    LockLostError("/locks/a", "session expired"),
    LockNotOwnedError("/locks/a"),
    LockNotOwnedError("/locks/a", "not yours"),
    NotALockNodeError("/locks/a/x", "not ephemeral"),
    InvalidServiceInstance("id", "a/b", "contains '/'"),
    InvalidUriSpec("{a", "Final variable not closed - expected }"),
    InstanceFormatError("invalid JSON", "/services/svc/id-1"),
    InstanceFormatError("no content"),
    PayloadTypeError("Plain", "decorate it"),
    ServiceNotRegisteredError("billing", "id-1"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_survives_pickling(error: PyCuratorError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)


def test_a_release_error_survives_pickling_with_every_failure() -> None:
    error = LockReleaseError("2 locks failed to release", [ValueError("a"), KeyError("b")])
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is LockReleaseError
    assert [repr(e) for e in copy.exceptions] == [repr(e) for e in error.exceptions]
