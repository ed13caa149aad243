"""The tile workers: threads that run the frames' tile jobs, ground truth before colour.

Two frames render at once, and a robot that maps its surroundings waits for the newer frame's depth before it
steps on. Jobs queue by priority, then in order: a ground-truth job (camera rays, depth, ids) runs before any
colour job still queued, the older frame's included, so the depth is ready after the newer frame's rays alone
and the colour of both frames is shaded while the robot maps and steps.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import cache
from typing import Any

GROUND_TRUTH, COLOUR = 0, 1  # priorities: lower first


class TileWorkers:
    def __init__(self, threads: int):
        self._jobs: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()  # first in, first out within a priority
        for index in range(threads):
            threading.Thread(target=self._work, name=f"tiles_{index}", daemon=True).start()

    def submit(self, priority: int, function: Callable[..., Any], *args: Any) -> Future:
        future: Future = Future()
        self._jobs.put((priority, next(self._order), future, function, args))
        return future

    def _work(self) -> None:
        while True:
            _, _, future, function, args = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as error:  # the job's consumer raises it
                future.set_exception(error)


@cache
def tile_workers(threads: int) -> TileWorkers:
    """The process's tile workers of `threads` threads (one set per thread count)."""
    return TileWorkers(threads)
