"""The recorder's writes, done in call order on a thread of their own while the simulation goes on.

What the recorder writes at a step (bag messages, a camera's ground-truth files and frames.jsonl line) is gathered
into one batch and handed to a single writer thread, which does the batches one after the other, each call in
the order it was made: the bags and files come out exactly as if they were written in place, while the robot
steps and the next frame renders. The values are taken when the call is made; a camera's frame may still be
rendering (a Future), and its batch waits for it on the writer thread. At most `max_frames` batches holding a
frame wait at a time: the recorder blocks at the next such batch until the writer catches up, so memory stays
bounded. The first failure of a write is raised by the next `flush` (or by `close`); later batches are dropped.
A writer that must be used from one thread only (rosbags' sqlite3 storage) is opened and closed through `run`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

MAX_FRAMES_QUEUED = 4  # batches holding a camera frame (a few MB each) waiting for the writer

Call = tuple[Callable[..., object], tuple]
T = TypeVar("T")


class OrderedWrites:
    def __init__(self, max_frames: int = MAX_FRAMES_QUEUED):
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="recorder-writes")
        self._frame_slots = threading.Semaphore(max_frames)
        self._batch: list[Call] = []
        self._batch_has_frame = False
        self._queued: deque[Future] = deque()
        self._failed = threading.Event()

    def call(self, function: Callable[..., object], *args: object) -> None:
        """`function(*args)` in this step's batch."""
        self._batch.append((function, args))

    def call_with_frame(self, function: Callable[..., object], *args: object) -> None:
        """`function(*args)` in this step's batch, which then counts as holding a frame (see the module)."""
        self._batch.append((function, args))
        self._batch_has_frame = True

    def flush(self) -> None:
        """Hand this step's batch to the writer thread; raises the first failed write so far."""
        self._raise_failed(block=False)
        if not self._batch:
            return
        batch, holds_frame = self._batch, self._batch_has_frame
        self._batch, self._batch_has_frame = [], False
        if holds_frame:
            self._frame_slots.acquire()
        self._queued.append(self._thread.submit(self._run, batch, holds_frame))

    def _run(self, batch: list[Call], holds_frame: bool) -> None:
        try:
            if not self._failed.is_set():  # after a failure the files are discarded anyway
                for function, args in batch:
                    function(*args)
        except BaseException:
            self._failed.set()
            raise
        finally:
            if holds_frame:
                self._frame_slots.release()

    def _raise_failed(self, block: bool) -> None:
        while self._queued and (block or self._queued[0].done()):
            self._queued.popleft().result()  # raises the write's error

    def run(self, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` on the writer thread once everything before it is written, and its result (for
        writers that must stay on one thread, such as sqlite3 bags: open them and close them through here)."""
        self.drain()
        return self._thread.submit(function, *args).result()

    def drain(self) -> None:
        """Wait until everything handed over is written; raises the first write that failed."""
        self.flush()
        self._raise_failed(block=True)

    def close(self) -> None:
        """Finish every write and stop the thread; raises the first write that failed."""
        try:
            self.drain()
        finally:
            self._thread.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        """Drop the writes not started; wait for the one running."""
        self._failed.set()
        self._batch = []
        self._thread.shutdown(wait=True, cancel_futures=True)
