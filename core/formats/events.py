"""`gt/<event camera>/events.h5`: an event camera's events, in the layout of DSEC's event files (Gehrig et al.,
RA-L 2021), which the event-camera community's loaders read (DSEC's EventSlicer, and what follows it):

    events/x    (N,)  uint16  column, 0 = left
    events/y    (N,)  uint16  row, 0 = top
    events/t    (N,)  int64   microseconds of simulation time, minus t_offset; non-decreasing
    events/p    (N,)  uint8   1 = brighter (ON), 0 = darker (OFF)
    ms_to_idx   (M,)  uint64  for each millisecond m from 0 to the end of the recording: the index of the
                              first event with t >= 1000 m (N when there is none), as DSEC defines it
    t_offset    ()    int64   microseconds to add to events/t (0: simulation time starts at 0)

The root's attributes `width` and `height` give the sensor's resolution, `schema` the version of this layout.
The datasets are chunked and deflated (gzip, which every HDF5 build reads), and grow as batches are appended, so a
long run never holds all its events in memory. In memory an event is a record of EVENT_DTYPE, stamped in integer
nanoseconds (the bags' stamps); the file rounds them to the nearest microsecond.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import h5py
import numpy as np

from core.errors import InputError
from core.rundir import FILE_MODE

EVENTS_FILE = "events.h5"  # in gt/<event camera>/
SCHEMA = "grade.events/1"
GROUP = "events"
FIELDS = ("x", "y", "t", "p")
FILE_DTYPES = {"x": np.dtype("<u2"), "y": np.dtype("<u2"), "t": np.dtype("<i8"), "p": np.dtype("u1")}
MS_TO_IDX = "ms_to_idx"
T_OFFSET = "t_offset"
EVENT_DTYPE = np.dtype([("x", "<u2"), ("y", "<u2"), ("t", "<i8"), ("p", "u1")])  # t: ns of simulation time
NS_PER_US = 1000
US_PER_MS = 1000
CHUNK_EVENTS = 1 << 16
GZIP_LEVEL = 4


def empty_events() -> np.ndarray:
    return np.zeros(0, dtype=EVENT_DTYPE)


def microseconds(t_ns: np.ndarray) -> np.ndarray:
    """Nanoseconds -> the nearest microsecond (halves up), monotone, so sorted events stay sorted."""
    return (np.asarray(t_ns, dtype=np.int64) + NS_PER_US // 2) // NS_PER_US


@dataclass
class EventFile:
    """An events.h5 as read: the events (t in ns, whole microseconds), the resolution and DSEC's index."""

    events: np.ndarray
    width: int
    height: int
    ms_to_idx: np.ndarray


class EventsWriter:
    """Writes events.h5 batch by batch: built under a hidden temporary name beside `path` and moved into place by
    `close()`, so `path` holds either the previous file or a complete new one; `abort()` (or an exception inside
    `with EventsWriter(...)`) removes it. Batches must be sorted by time and follow each other in time."""

    def __init__(self, path: str | Path, width: int, height: int):
        if not (0 < width <= np.iinfo(np.uint16).max + 1 and 0 < height <= np.iinfo(np.uint16).max + 1):
            raise ValueError(f"{path}: resolution {width}x{height} does not fit events' uint16 coordinates")
        self.path = Path(path)
        self.width, self.height = int(width), int(height)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        os.close(fd)
        self._tmp = Path(tmp)
        try:
            self._file = h5py.File(self._tmp, "w")
            group = self._file.create_group(GROUP)
            for name in FIELDS:
                group.create_dataset(name, shape=(0,), maxshape=(None,), dtype=FILE_DTYPES[name],
                                     chunks=(CHUNK_EVENTS,), compression="gzip", compression_opts=GZIP_LEVEL,
                                     shuffle=True)
            self._file.create_dataset(MS_TO_IDX, shape=(0,), maxshape=(None,), dtype="<u8", chunks=(CHUNK_EVENTS,),
                                      compression="gzip", compression_opts=GZIP_LEVEL, shuffle=True)
            self._file.create_dataset(T_OFFSET, data=np.int64(0))
            self._file.attrs["width"] = self.width
            self._file.attrs["height"] = self.height
            self._file.attrs["schema"] = SCHEMA
        except BaseException:
            self._discard()
            raise
        self.count = 0
        self._last_us = 0
        self._open = True

    def _extend(self, dataset: h5py.Dataset, values: np.ndarray) -> None:
        start = dataset.shape[0]
        dataset.resize((start + len(values),))
        dataset[start:] = values

    def _index_up_to(self, last_ms: int, t_us: np.ndarray) -> None:
        """DSEC's ms_to_idx for every millisecond up to `last_ms` not yet written: all events before this batch are
        earlier than such a millisecond (else it would have been written), so its first event is in `t_us`."""
        known = self._file[MS_TO_IDX].shape[0]
        if last_ms < known:
            return
        starts = np.arange(known, last_ms + 1, dtype=np.int64) * US_PER_MS
        self._extend(self._file[MS_TO_IDX], self.count + np.searchsorted(t_us, starts, side="left").astype(np.uint64))

    def append(self, events: np.ndarray) -> None:
        """One batch of EVENT_DTYPE records, sorted by time, none earlier than the last batch's."""
        if not self._open:
            raise ValueError(f"{self.path}: the events writer is closed")
        if events.dtype != EVENT_DTYPE or events.ndim != 1:
            raise ValueError(f"{self.path}: events must be a 1D array of {EVENT_DTYPE}, got {events.dtype}")
        if not len(events):
            return
        t_us = microseconds(events["t"])
        if t_us[0] < self._last_us or np.any(np.diff(t_us) < 0) or t_us[0] < 0:
            raise ValueError(f"{self.path}: events must be sorted by time, at or after {self._last_us} us and >= 0")
        if events["x"].max() >= self.width or events["y"].max() >= self.height or events["p"].max() > 1:
            raise ValueError(f"{self.path}: events outside {self.width}x{self.height} or with polarity other than "
                             "0 or 1")
        group = self._file[GROUP]
        for name in ("x", "y", "p"):
            self._extend(group[name], events[name])
        self._extend(group["t"], t_us)
        self._index_up_to(int(t_us[-1]) // US_PER_MS, t_us)
        self.count += len(events)
        self._last_us = int(t_us[-1])

    def close(self, end_s: float) -> Path:
        """Finish the file, its millisecond index running to `end_s` (the end of the time the camera saw), and
        move it to `path`."""
        if not self._open:
            raise ValueError(f"{self.path}: the events writer is closed")
        end_us = round(float(end_s) * 1e6)
        if end_us < self._last_us:
            raise ValueError(f"{self.path}: end {end_s} s is before the last event ({self._last_us} us)")
        self._open = False
        try:
            self._index_up_to(end_us // US_PER_MS, np.zeros(0, dtype=np.int64))
            self._file.close()
            os.chmod(self._tmp, FILE_MODE)
            os.replace(self._tmp, self.path)
        except BaseException:
            self._discard()
            raise
        return self.path

    def abort(self) -> None:
        """Drop the file being written; `path` is left untouched. Idempotent."""
        self._open = False
        self._discard()

    def _discard(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None and file.id.valid:
            file.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None or self._open:
            self.abort()


def write_events(path: str | Path, events: np.ndarray, width: int, height: int, end_s: float) -> Path:
    """All of a camera's events at once (EventsWriter for a stream of batches)."""
    with EventsWriter(path, width, height) as writer:
        writer.append(events)
        return writer.close(end_s)


def _dataset(file: h5py.File, name: str, path: Path) -> np.ndarray:
    item = file.get(name)
    if not isinstance(item, h5py.Dataset):
        raise InputError("missing dataset", path, name)
    return item[()]


def read_events(path: str | Path) -> EventFile:
    """The whole file; InputError naming the file and dataset when it is not an events.h5 as written here."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path)
    try:
        file = h5py.File(path, "r")
    except OSError as error:
        raise InputError(f"not an HDF5 file ({error})", path) from None
    with file:
        columns = {}
        for name in FIELDS:
            key = f"{GROUP}/{name}"
            values = _dataset(file, key, path)
            if values.ndim != 1 or values.dtype != FILE_DTYPES[name]:
                raise InputError(f"expected a 1D {FILE_DTYPES[name]} array, got {values.dtype} {values.shape}",
                                 path, key)
            columns[name] = values
        ms_to_idx = _dataset(file, MS_TO_IDX, path)
        t_offset = _dataset(file, T_OFFSET, path)
        attrs = {name: file.attrs.get(name) for name in ("width", "height")}
    count = len(columns["t"])
    for name in FIELDS:
        if len(columns[name]) != count:
            raise InputError(f"{len(columns[name])} values, but events/t has {count}", path, f"{GROUP}/{name}")
    for name, value in attrs.items():
        if not isinstance(value, np.integer) or value <= 0:
            raise InputError(f"expected a positive integer attribute, got {value!r}", path, name)
    width, height = int(attrs["width"]), int(attrs["height"])
    if t_offset.shape != () or not np.issubdtype(t_offset.dtype, np.integer):
        raise InputError(f"expected an integer scalar, got {t_offset.dtype} {t_offset.shape}", path, T_OFFSET)
    t_us = columns["t"] + np.int64(t_offset)
    if count and (np.any(np.diff(t_us) < 0) or t_us[0] < 0):
        raise InputError("times must be >= 0 and non-decreasing", path, f"{GROUP}/t")
    for name, limit in (("x", width), ("y", height), ("p", 2)):
        if count and columns[name].max() >= limit:
            raise InputError(f"values must be < {limit}", path, f"{GROUP}/{name}")
    if ms_to_idx.ndim != 1:
        raise InputError(f"expected a 1D array, got shape {ms_to_idx.shape}", path, MS_TO_IDX)
    # DSEC indexes the stored times, before t_offset.
    expected = np.searchsorted(columns["t"], np.arange(len(ms_to_idx), dtype=np.int64) * US_PER_MS, side="left")
    covered = len(ms_to_idx) * US_PER_MS > (columns["t"][-1] if count else -1)
    if not np.array_equal(ms_to_idx, expected) or not covered:
        raise InputError("does not index the events by millisecond (t[ms_to_idx[m]] >= 1000 m > "
                         "t[ms_to_idx[m] - 1], up to the last event)", path, MS_TO_IDX)
    events = np.empty(count, dtype=EVENT_DTYPE)
    for name in ("x", "y", "p"):
        events[name] = columns[name]
    events["t"] = t_us * NS_PER_US
    return EventFile(events, width, height, ms_to_idx.astype(np.int64))
