"""The event camera (simulation.sensors.event_camera, after ESIM) against scenes whose events are known in closed
form, no renderer: an edge moving at constant speed, pixels whose log intensity ramps linearly, a static scene with
noise. Its config (core.config.event_camera) refuses bad values naming the field. `grade view` draws its event
frames."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from core.config.event_camera import EventCameraConfig
from core.formats.events import EVENT_DTYPE, EVENTS_FILE, write_events
from core.seeding import generator
from postprocess.view import EVENT_GAP_PX, event_frame, view_run
from simulation.sensors.event_camera import LOG_EPS, EventSimulator, log_intensity, simulate
from tests.test_view import environment_package, write_run

NS = 1e-9
# The moving edge: a step from DARK to BRIGHT (or back) whose position is X0 + SPEED t; each pixel is the mean of
# the intensity over its area (a box filter), so a pixel ramps as the edge sweeps it in 1 / SPEED s.
WIDTH, HEIGHT = 40, 4
X0, SPEED, DURATION = 5.0, 100.0, 0.3  # px, px/s, s: the edge sweeps columns 5 to 34 whole
DARK, BRIGHT = 0.05, 0.6
THRESHOLD = 0.2


def edge_config(**changes) -> EventCameraConfig:
    fields = {"name": "dvs", "width": WIDTH, "height": HEIGHT, "positive_threshold": THRESHOLD,
              "negative_threshold": THRESHOLD, "threshold_sigma": 0.0, "max_step_s": 0.01} | changes
    return EventCameraConfig(**fields)


def edge_render(before: float, after: float):
    columns = np.arange(WIDTH, dtype=np.float64)[None, :].repeat(HEIGHT, axis=0)

    def render(t: float) -> np.ndarray:
        covered = np.clip(X0 + SPEED * t - columns, 0.0, 1.0)  # the share of each pixel the edge has passed
        return (before + (after - before) * covered).astype(np.float32)

    return render


@pytest.mark.parametrize(("before", "after", "on"), [(DARK, BRIGHT, 1), (BRIGHT, DARK, 0)])
def test_a_moving_edge_gives_each_pixel_it_crosses_its_log_contrast_over_the_threshold_in_events(before, after, on):
    """Each swept pixel gives floor(|log(eps + I2) - log(eps + I1)| / C) events of the edge's polarity (here the
    same as floor(|log I2 - log I1| / C): eps = 1e-3 moves neither over a whole number), the others none. Times:
    the log intensity of a swept pixel is monotone while the edge crosses it, so on every interval between two
    renders both it and the line between its ends cross each level once; the event's time and the true crossing
    time lie in the same interval, at most its length apart (the bound the adaptive sampling keeps short)."""
    result = simulate(edge_render(before, after), edge_config(), generator(1, "test/edge"), 0.0, DURATION)
    events, samples = result.events, result.sample_times
    contrast = abs(math.log(LOG_EPS + after) - math.log(LOG_EPS + before))
    expected = math.floor(contrast / THRESHOLD)
    assert expected == math.floor(abs(math.log(after) - math.log(before)) / THRESHOLD) == 12
    counts = np.zeros((HEIGHT, WIDTH), np.int64)
    np.add.at(counts, (events["y"], events["x"]), 1)
    swept = (np.arange(WIDTH) >= X0) & (np.arange(WIDTH) + 1 <= X0 + SPEED * DURATION)
    assert (counts[:, swept] == expected).all() and (counts[:, ~swept] == 0).all()
    assert (events["p"] == on).all()
    assert np.all(np.diff(events["t"]) >= 0)

    # The true crossing of level k of column c: log(eps + I) = log(eps + I1) +- k C, I linear in the covered share.
    direction = 1.0 if after > before else -1.0
    pixel = events["y"].astype(np.int64) * WIDTH + events["x"]
    order = np.argsort(pixel, kind="stable")  # each pixel's events stay in time order: the k-th crosses level k
    k = np.empty(len(events), np.int64)
    k[order] = np.arange(len(events)) - np.searchsorted(pixel[order], pixel[order]) + 1
    level = math.log(LOG_EPS + before) + direction * k * THRESHOLD
    share = (np.exp(level) - LOG_EPS - before) / (after - before)
    truth = (events["x"] + share - X0) / SPEED
    interval = np.searchsorted(samples, truth)
    start, end = samples[interval - 1], samples[interval]
    t = events["t"] * NS
    assert np.all((t >= start - NS) & (t <= end + NS)), "an event left the interval of its true crossing"
    error = np.abs(t - truth)
    assert error.max() <= (end - start).max()
    print(f"edge: {len(samples) / DURATION:.0f} renders/s, timing error max {error.max() * 1e6:.1f} us, "
          f"mean {error.mean() * 1e6:.1f} us, longest interval during a crossing {(end - start).max() * 1e6:.0f} us")


# Pixels whose log intensity is exactly linear in time, L = L0 + rate t (I = exp(L) - eps): the linear
# interpolation between renders is exact, so every event lies where L crosses a level, to the nanosecond.
RAMP_WIDTH = 6
RAMP_RATES = np.array([1.0, 3.0, -2.0, 7.5, -11.0, 0.0])  # per column, log intensity per second
RAMP_START = 0.0  # falling at 11 /s for 0.43 s stays above log(eps)


def ramp_render(t: float) -> np.ndarray:
    return (np.exp(RAMP_START + RAMP_RATES * t) - LOG_EPS)[None, :].astype(np.float64)


def ramp_crossings(duration: float, refractory: float) -> list[tuple[int, float, int]]:
    """ESIM's loop, written out: each column's crossings of L0 +- k C in time order, an event kept when it comes
    at least `refractory` after that pixel's last kept event."""
    kept = []
    for x, rate in enumerate(RAMP_RATES):
        last = -math.inf
        for k in range(1, int(abs(rate) * duration / THRESHOLD) + 1):
            t = k * THRESHOLD / abs(rate)
            if t - last >= refractory:
                kept.append((x, t, int(rate > 0)))
                last = t
    return sorted(kept, key=lambda event: event[1])


@pytest.mark.parametrize("refractory", [0.0, 0.045, 0.11])
def test_linear_log_ramps_give_events_at_the_exact_crossings_and_the_refractory_period_drops_the_close_ones(refractory):
    """At C = 0.2 the columns cross a level every 0.2 / |rate| s (26.7 ms at 7.5 /s, 18.2 ms at 11 /s); a
    refractory period of 45 or 110 ms (no whole number of those spacings, so no tie) keeps every 2nd to 7th of them, as ESIM's loop does (renders every 9 ms)."""
    duration = 0.43
    config = EventCameraConfig(name="dvs", width=RAMP_WIDTH, height=1, positive_threshold=THRESHOLD,
                               negative_threshold=THRESHOLD, threshold_sigma=0.0, refractory_s=refractory,
                               max_step_s=0.05)
    events = simulate(ramp_render, config, generator(1, "test/ramp"), 0.0, duration).events
    expected = ramp_crossings(duration, refractory)
    assert len(events) == len(expected)
    for x in range(RAMP_WIDTH):
        mine = events["t"][events["x"] == x] * NS
        theirs = np.array([t for column, t, _ in expected if column == x])
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=2 * NS)
        assert np.all(np.diff(mine) >= refractory - NS)
        assert (events["p"][events["x"] == x] == int(RAMP_RATES[x] > 0)).all()
    if refractory:
        assert len(expected) < len(ramp_crossings(duration, 0.0))


def test_the_adaptive_step_keeps_the_largest_log_change_at_the_bound():
    """ESIM's brightness criterion on the ramps: the fastest pixel changes by 11 per second, so after the first
    step (max_step_s, no rate known yet) the renders come every 0.1 / 11 s; min_step_s and max_step_s bound it."""
    def times(**changes) -> np.ndarray:
        fields = {"name": "dvs", "width": RAMP_WIDTH, "height": 1, "max_log_change": 0.1, "max_step_s": 0.05}
        config = EventCameraConfig(**(fields | changes))
        return simulate(ramp_render, config, generator(1, "test/ramp"), 0.0, 0.5).sample_times

    steps = np.diff(times())
    assert steps[0] == pytest.approx(0.05)
    np.testing.assert_allclose(steps[1:-1], 0.1 / 11.0, rtol=1e-9)
    assert np.all(np.diff(times(min_step_s=0.02))[1:-1] == pytest.approx(0.02))
    assert np.all(np.diff(times(max_step_s=0.005)) == pytest.approx(0.005))


def static_render(t: float) -> np.ndarray:
    return np.full((24, 32), 0.3, np.float32)


def test_a_static_scene_gives_no_events_without_noise_and_the_configured_noise_rate_with_it():
    """768 pixels at 5 Hz for 10 s: 38,400 noise events expected, a Poisson count with standard deviation 196;
    the count must lie within 5 of them (a false alarm once in 1.7 million runs), the ON share within 5 binomial
    standard deviations of one half, and each half of the time within 5 standard deviations of half the count."""
    quiet = EventCameraConfig(name="dvs", width=32, height=24, threshold_sigma=0.05, max_step_s=0.05)
    assert len(simulate(static_render, quiet, generator(1, "test/static"), 0.0, 2.0).events) == 0

    rate, duration, pixels = 5.0, 10.0, 32 * 24
    noisy = quiet.model_copy(update={"noise_rate_hz": rate})
    events = simulate(static_render, noisy, generator(1, "test/static"), 0.0, duration).events
    mean = rate * duration * pixels
    assert abs(len(events) - mean) <= 5 * math.sqrt(mean)
    assert abs(events["p"].sum() - len(events) / 2) <= 5 * math.sqrt(len(events) / 4)
    first_half = int(np.sum(events["t"] * NS <= duration / 2))
    assert abs(first_half - len(events) / 2) <= 5 * math.sqrt(len(events) / 4)
    assert events["x"].max() < 32 and events["y"].max() < 24
    assert np.all(np.diff(events["t"]) >= 0) and events["t"].min() > 0


def test_same_seed_same_events_and_files_another_seed_other_thresholds(tmp_path):
    config = edge_config(threshold_sigma=0.05, noise_rate_hz=2.0, refractory_s=1e-3)

    def run(seed: int):
        return simulate(edge_render(DARK, BRIGHT), config, generator(seed, "simulation/event_camera/dvs"), 0.0,
                        DURATION).events

    first, again, other = run(3), run(3), run(4)
    assert first.tobytes() == again.tobytes()
    paths = [write_events(tmp_path / f"{name}.h5", events, WIDTH, HEIGHT, DURATION)
             for name, events in (("first", first), ("again", again))]
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert first.tobytes() != other.tobytes()
    thresholds = [EventSimulator(config, generator(seed, "simulation/event_camera/dvs")).positive for seed in (3, 4)]
    assert not np.array_equal(*thresholds)
    assert min(t.min() for t in thresholds) > 0
    assert np.std(thresholds[0]) == pytest.approx(0.05, rel=0.3)


def test_mismatched_thresholds_are_clipped_positive():
    config = EventCameraConfig(name="dvs", width=50, height=50, positive_threshold=0.02, threshold_sigma=0.05)
    simulator = EventSimulator(config, generator(1, "test/clip"))
    assert simulator.positive.min() == pytest.approx(0.01) and (simulator.negative > 0).all()


def test_rgb_is_taken_to_its_luminance():
    rgb = np.random.default_rng(0).random((3, 4, 3))
    grey = rgb @ np.array([0.2126, 0.7152, 0.0722])
    np.testing.assert_allclose(log_intensity(rgb, 4, 3), np.log(LOG_EPS + grey).reshape(-1))
    with pytest.raises(ValueError, match="intensity must be finite"):
        log_intensity(-rgb, 4, 3)
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        log_intensity(rgb[:, :3], 4, 3)


def test_samples_must_move_forward_in_time():
    simulator = EventSimulator(edge_config(), generator(1, "test/order"))
    simulator.add_sample(0.0, edge_render(DARK, BRIGHT)(0.0))
    with pytest.raises(ValueError, match="after the last one"):
        simulator.add_sample(0.0, edge_render(DARK, BRIGHT)(0.0))


@pytest.mark.parametrize(("field", "value"), [
    ("positive_threshold", 0.0), ("negative_threshold", -0.1), ("threshold_sigma", -0.01), ("refractory_s", -1.0),
    ("noise_rate_hz", -1.0), ("max_log_change", 0.0), ("min_step_s", -0.001), ("max_step_s", 0.0),
    ("fov_deg", 180.0), ("width", 0),
])
def test_bad_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ValidationError, match=field):
        EventCameraConfig(name="dvs", **{field: value})


def test_steps_out_of_order_and_a_projection_too_big_are_refused_naming_the_fields():
    with pytest.raises(ValidationError, match="min_step_s .* max_step_s"):
        EventCameraConfig(name="dvs", min_step_s=0.1, max_step_s=0.01)
    with pytest.raises(ValidationError, match="width, height"):
        EventCameraConfig(name="dvs", width=20000, height=20000)
    with pytest.raises(ValidationError, match="extra"):
        EventCameraConfig(name="dvs", contrast=0.2)


# ---------------------------------------------------------------- grade view's event frames


def test_an_event_frame_draws_each_pixels_last_event_in_the_window():
    events = np.zeros(5, EVENT_DTYPE)
    events["t"] = [5, 10, 20, 30, 40]
    events["x"], events["y"] = [2, 0, 0, 1, 2], [0, 1, 1, 1, 0]
    events["p"] = [1, 1, 0, 1, 0]  # the first (t = 5) and the last (t = 40) fall outside [10, 40)
    frame = event_frame(events, 3, 2, 10, 40)
    white, blue, red = [255, 255, 255], [0, 0, 255], [255, 0, 0]
    assert frame[1, 0].tolist() == red  # ON at 10, then OFF at 20
    assert frame[1, 1].tolist() == blue
    assert frame[0, 2].tolist() == white and frame[0, 0].tolist() == white


def test_grade_view_draws_a_strip_of_event_frames_per_event_camera(tmp_path):
    """The synthetic recording of test_view, with the moving edge's events in gt/dvs/events.h5."""
    run = write_run(tmp_path / "run", environment_package(tmp_path / "assets" / "room"))
    events = simulate(edge_render(DARK, BRIGHT), edge_config(), generator(1, "test/edge"), 0.0, DURATION).events
    write_events(run / "gt" / "dvs" / EVENTS_FILE, events, WIDTH, HEIGHT, DURATION)
    result = view_run(run, frames=3)
    strip_path = tmp_path / "run" / "view" / "events_dvs.png"
    assert strip_path in result.written
    strip = np.asarray(Image.open(strip_path).convert("RGB"))
    assert strip.shape == (HEIGHT, 3 * WIDTH + 2 * EVENT_GAP_PX, 3)
    first = strip[:, :WIDTH]
    # In the first 33 ms the edge sweeps columns 5 to 8 (and starts on 9): ON events, blue; nothing else.
    drawn = np.flatnonzero((first != 255).any(axis=(0, 2)))
    assert drawn.min() == 5 and drawn.max() <= 9
    assert (first[:, drawn] == [0, 0, 255]).all()
