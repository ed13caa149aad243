"""An event camera after ESIM (Rebecq, Gehrig and Scaramuzza, "ESIM: an Open Event Camera Simulator", CoRL 2018):
pure computation, no I/O (the events go to core.formats.events and the bags' dvs_msgs/EventArray).

Each pixel keeps a reference log intensity, the level of its last event. Between two renders its log intensity
L = log(LOG_EPS + I) is taken as linear in time; every crossing of reference + k C+ (rising) or reference - k C-
(falling) is an event (ON or OFF), stamped where the line crosses that level, and the reference moves to the last
level crossed. A pixel's thresholds are drawn once, normal around C+ and C- (threshold_sigma), never below
MIN_THRESHOLD. An event less than refractory_s after the pixel's last event is dropped (the reference still
moves, as ESIM's). Noise events arrive at noise_rate_hz per pixel (Poisson, uniform in time, either polarity with
equal odds); they neither move the reference nor start a refractory period.

The renders come at an adaptive rate (ESIM's brightness criterion): the next render is due when the largest
per-pixel rate of change of L seen between the last two renders would have changed some pixel by
max_log_change, bounded by min_step_s and max_step_s; the first step is max_step_s, before any rate is known.

Randomness comes only from the numpy Generator passed in (the thresholds when the simulator is made, then the
noise of each interval), so the same seed and the same renders give the same events, byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.config.event_camera import EventCameraConfig
from core.formats.events import EVENT_DTYPE, empty_events

# Linear intensity is 1 for white: eps keeps black pixels finite (log(1e-3) = -6.9), as ESIM's log_eps.
LOG_EPS = 1e-3
MIN_THRESHOLD = 0.01  # ESIM's floor for a pixel's threshold under mismatch
# Rec. 709 luminance of linear RGB (the renderer's primaries are sRGB's, which share Rec. 709's).
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])
NS_PER_S = 1e9

Render = Callable[[float], np.ndarray]


def log_intensity(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """A linear-intensity (H, W) image, or linear RGB (H, W, 3) taken to its luminance -> log(LOG_EPS + I),
    flattened row-major, float64."""
    array = np.asarray(image)
    if array.shape not in ((height, width), (height, width, 3)) or not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"expected a float ({height}, {width}) or ({height}, {width}, 3) image, got {array.dtype} "
                         f"{array.shape}")
    intensity = array @ LUMINANCE if array.ndim == 3 else array.astype(np.float64)
    if not np.all(intensity >= 0) or not np.all(np.isfinite(intensity)):
        raise ValueError("intensity must be finite and >= 0 (linear light)")
    return np.log(LOG_EPS + intensity.reshape(-1))


def _thresholds(rng: np.random.Generator, nominal: float, sigma: float, pixels: int) -> np.ndarray:
    if sigma == 0:
        return np.full(pixels, nominal)
    return np.maximum(rng.normal(nominal, sigma, pixels), min(MIN_THRESHOLD, nominal))


def _group_ranks(counts: np.ndarray) -> np.ndarray:
    """For groups of sizes `counts` laid end to end: each element's rank in its group (0, 1, ...)."""
    starts = np.cumsum(counts) - counts
    return np.arange(counts.sum()) - np.repeat(starts, counts)


class EventSimulator:
    """One event camera's state between renders. Feed it renders in time order with `add_sample`; ask it when it
    wants the next with `next_sample_time`."""

    def __init__(self, config: EventCameraConfig, rng: np.random.Generator):
        self.config = config
        self.width, self.height = config.width, config.height
        pixels = self.width * self.height
        self._rng = rng
        self.positive = _thresholds(rng, config.positive_threshold, config.threshold_sigma, pixels)
        self.negative = _thresholds(rng, config.negative_threshold, config.threshold_sigma, pixels)
        self._reference = np.zeros(0)
        self._log = np.zeros(0)
        self._last_event = np.full(pixels, -np.inf)
        self._time = -np.inf
        self._rate: float | None = None  # largest |dL/dt| between the last two renders
        self.sample_times: list[float] = []

    def next_sample_time(self) -> float:
        """When the next render is due (the adaptive step after the last one)."""
        if not self.sample_times:
            raise ValueError("no render yet: the first sample's time is the caller's")
        config = self.config
        step = config.max_step_s if not self._rate else config.max_log_change / self._rate
        return self._time + min(max(step, config.min_step_s), config.max_step_s)

    def add_sample(self, t: float, image: np.ndarray) -> np.ndarray:
        """The render at simulation time `t` (s, after the last one's) -> the events since the last render, in
        (previous t, t], sorted by time (EVENT_DTYPE; the first render gives none)."""
        log = log_intensity(image, self.width, self.height)
        if not math.isfinite(t) or t <= self._time:
            raise ValueError(f"sample time {t!r} must be finite and after the last one ({self._time})")
        if not self.sample_times:
            self._reference, self._log, self._time = log.copy(), log, float(t)
            self.sample_times.append(float(t))
            return empty_events()
        t0, dt = self._time, float(t) - self._time
        signal_t, signal_pixel, signal_on = self._crossings(self._log, log, t0, dt)
        noise_t, noise_pixel, noise_on = self._noise(t0, dt)
        self._rate = float(np.max(np.abs(log - self._log))) / dt
        self._log, self._time = log, float(t)
        self.sample_times.append(float(t))
        times = np.rint(np.concatenate([signal_t, noise_t]) * NS_PER_S).astype(np.int64)
        pixel = np.concatenate([signal_pixel, noise_pixel])
        order = np.argsort(times, kind="stable")
        events = np.empty(len(times), dtype=EVENT_DTYPE)
        events["t"] = times[order]
        events["x"] = pixel[order] % self.width
        events["y"] = pixel[order] // self.width
        events["p"] = np.concatenate([signal_on, noise_on])[order]
        return events

    def _crossings(self, log0: np.ndarray, log1: np.ndarray, t0: float,
                   dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The threshold crossings of every pixel between two renders, pixel by pixel in order, each pixel's in time
        order, refractory period applied: (times s, flat pixel index, ON)."""
        change = log1 - log0
        rising = change > 0
        sign = np.where(rising, 1.0, -1.0)
        threshold = np.where(rising, self.positive, self.negative)
        # In the direction of change, the distance of both renders from the reference, in thresholds: crossings
        # are the whole numbers k >= 1 with u0 < k <= u1.
        u0 = sign * (log0 - self._reference) / threshold
        u1 = sign * (log1 - self._reference) / threshold
        first = np.maximum(np.floor(u0) + 1, 1)
        last = np.floor(u1)
        pixels = np.flatnonzero(last >= first)
        if not len(pixels):
            return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.uint8)
        first, last, u0, u1 = first[pixels], last[pixels], u0[pixels], u1[pixels]
        counts = (last - first + 1).astype(np.int64)
        self._reference[pixels] += sign[pixels] * last * threshold[pixels]
        start = t0 + (first - u0) / (u1 - u0) * dt  # each pixel's first crossing
        spacing = dt / (u1 - u0)  # between its crossings: one threshold apart on the line
        keep_from, keep_every = self._refractory(pixels, start, spacing, counts)
        rank = _group_ranks(counts)
        every = np.repeat(keep_every, counts)
        skip = rank - np.repeat(keep_from, counts)
        kept = (skip >= 0) & (skip % every == 0)
        pixel = np.repeat(pixels, counts)[kept]
        times = (np.repeat(start, counts) + rank * np.repeat(spacing, counts))[kept]
        emitted = keep_from < counts
        final = keep_from + (counts - 1 - keep_from) // keep_every * keep_every
        self._last_event[pixels[emitted]] = start[emitted] + final[emitted] * spacing[emitted]
        return times, pixel, rising[pixel].astype(np.uint8)

    def _refractory(self, pixels: np.ndarray, start: np.ndarray, spacing: np.ndarray,
                    counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of each pixel's evenly spaced crossings survive the refractory period: the first that comes at
        least refractory_s after the pixel's last event, then every m-th, m the fewest spacings that span it."""
        period = self.config.refractory_s
        if period == 0:
            return np.zeros(len(pixels), np.int64), np.ones(len(pixels), np.int64)
        last = self._last_event[pixels]
        wait = np.clip(np.ceil((last + period - start) / spacing), 0, counts).astype(np.int64)
        wait += (start + wait * spacing - last < period) & (wait < counts)  # ceil's rounding, one spacing short
        every = np.clip(np.ceil(period / spacing), 1, counts + 1).astype(np.int64)
        every += (every * spacing < period) & (every <= counts)
        return wait, every

    def _noise(self, t0: float, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rate = self.config.noise_rate_hz
        if rate == 0:
            return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.uint8)
        pixels = self.width * self.height
        count = int(self._rng.poisson(rate * pixels * dt))
        pixel = self._rng.integers(0, pixels, count)
        times = t0 + (1.0 - self._rng.random(count)) * dt  # in (t0, t0 + dt], as the signal's
        on = self._rng.integers(0, 2, count).astype(np.uint8)
        return times, pixel, on


@dataclass
class EventSimulation:
    """What `simulate` made: the events (EVENT_DTYPE, sorted by time) and the times it rendered at."""

    events: np.ndarray
    sample_times: np.ndarray


def simulate(render: Render, config: EventCameraConfig, rng: np.random.Generator, t0: float,
             t1: float) -> EventSimulation:
    """Render at t0, then at the adaptive times up to t1 (the last step shortened to end there), and return every
    event in (t0, t1]. `render(t)` gives the linear intensity (or linear RGB) at simulation time t."""
    if not t1 > t0:
        raise ValueError(f"t1 ({t1}) must be after t0 ({t0})")
    simulator = EventSimulator(config, rng)
    batches = [simulator.add_sample(t0, render(t0))]
    t = t0
    while t < t1:
        t = min(simulator.next_sample_time(), t1)
        batches.append(simulator.add_sample(t, render(t)))
    return EventSimulation(np.concatenate(batches), np.array(simulator.sample_times))
