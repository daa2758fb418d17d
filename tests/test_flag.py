"""The event a thread-based handler's units wait on when it is set once (a task's end, a latch's
next change): ``threading.Event``'s ``set``, ``is_set`` and ``wait``, made without a condition,
and the handler's own event under a green handler."""

from __future__ import annotations

import threading
import time

from kazoo.handlers.threading import SequentialThreadingHandler

from pycurator._client.concurrency import flag_maker
from pycurator.handlers import FastThreadingHandler

from .support import SOON, eventually


def test_a_thread_based_handler_gets_a_flag_that_is_no_threading_event() -> None:
    for handler in (SequentialThreadingHandler(), FastThreadingHandler()):
        flag = flag_maker(handler)()
        assert not isinstance(flag, threading.Event)
        assert not flag.is_set()


def test_a_green_handler_gets_its_own_event() -> None:
    class Green:
        name = "sequential_gevent_handler"

        def event_object(self) -> str:
            return "its event"

    assert flag_maker(Green())() == "its event"


def test_a_set_flag_is_set_and_its_waits_end_at_once() -> None:
    flag = flag_maker(SequentialThreadingHandler())()
    flag.set()
    flag.set()  # again: nothing changes
    assert flag.is_set()
    assert flag.wait(0) and flag.wait(None) and flag.wait(SOON)


def test_a_wait_for_a_flag_not_set_ends_after_its_timeout_false() -> None:
    flag = flag_maker(SequentialThreadingHandler())()
    started = time.monotonic()
    assert flag.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    assert flag.wait(0) is False


def test_setting_a_flag_wakes_every_waiter_even_after_one_gave_up() -> None:
    flag = flag_maker(SequentialThreadingHandler())()
    assert not flag.wait(0.01)  # a waiter that gave up leaves nothing that keeps others waiting
    woken: list[bool] = []
    waiting = threading.Barrier(4)

    def waiter() -> None:
        waiting.wait(SOON)
        woken.append(flag.wait(SOON))

    threads = [threading.Thread(target=waiter) for _ in range(3)]
    for thread in threads:
        thread.start()
    waiting.wait(SOON)
    eventually(lambda: len(flag._gates or ()) == 3, what="three threads waiting")
    flag.set()
    for thread in threads:
        thread.join(SOON)
    assert woken == [True, True, True]
