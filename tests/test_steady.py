"""The kit's ``steady``: a value waited for until it stops changing, what the cross-language
scenarios read a listener's record with (a cache tells its listeners after it stores)."""

from __future__ import annotations

import threading
import time

import pytest

from pycurator.testing._helpers import steady


def test_a_value_is_returned_once_it_stays_the_same_for_the_window() -> None:
    told: list[int] = []

    def tell() -> None:
        for event in range(5):
            time.sleep(0.05)
            told.append(event)

    teller = threading.Thread(target=tell)
    start = time.monotonic()
    teller.start()
    try:
        assert steady(lambda: len(told), window=0.4, timeout=10.0) == 5
    finally:
        teller.join(10.0)
    assert time.monotonic() - start >= 0.25 + 0.4  # the last change, then a quiet window


def test_a_value_that_keeps_changing_fails_after_the_timeout_naming_it() -> None:
    ticks = iter(range(10**9))
    with pytest.raises(AssertionError, match=r"still changing after 0\.3s"):
        steady(lambda: next(ticks), window=0.2, timeout=0.3)
