"""The S-curve velocity profile, its network, the command follower, and calibration from recorded
wheel velocities (CSV and ROS bags written with rosbags), checked against the curve's analytic
properties and known synthetic truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import assert_refused, run_grade

from core.errors import InputError
from core.formats.s_curve import (
    HEADS,
    PARAM_NAMES,
    SCurveNetwork,
    head_inverse,
    load_network,
    save_network,
    weight_shapes,
)
from core.seeding import generator
from simulation.robots.mecanum import HALF_TRACK, HALF_WHEELBASE, WHEEL_RADIUS, wheel_speeds
from simulation.robots.s_curve import (
    DEFAULT_PARAMS,
    LINEAR_POINT,
    SCurveFollower,
    curve_break,
    default_network,
    s_curve,
    s_curve_slope,
    wheel_reference_change,
)
from simulation.tiago.calibration import calibrate, fit_network, read_recording, step_responses

# (L, a, b, m, k1, k2): the built-in profile over a wide range of L, plus curves whose break is b
# (b before the ramp reaches 0.8 L), soft and sharp bends.
CURVES = [(change, *default_network().params(change)) for change in (0.05, 1.0, 13.1, 30.0)] + [
    (10.0, 0.3, 0.5, 8.0, 0.2, 0.05), (20.0, 0.02, 0.1, 30.0, 2.0, 2.0), (5.0, 0.5, 5.5, 0.5, 0.01, 0.01),
]
RECORDED_TWISTS = [(0.2, 0.0, 0.0), (0.5, 0.0, 0.0), (0.8, 0.0, 0.0), (0.0, 0.4, 0.0), (0.0, 0.0, 1.0),
                   (0.3, 0.3, 0.0), (0.0, 0.7, 0.0), (0.0, 0.0, 0.4)]
RECORDING_RATE = 100.0  # Hz, as the real robot's joint_states
RECORDING_SECONDS = 3.0
NOISE = 0.01  # of the largest wheel speed of each recording


def split(curve: tuple) -> tuple[float, np.ndarray]:
    return curve[0], np.array(curve[1:])


@pytest.fixture(scope="module")
def true_network() -> SCurveNetwork:
    """A network whose parameters vary with L: random hidden weights around a plausible ramp."""
    rng = generator(0, "tests/scurve/true-network")
    weights = [rng.normal(0.0, 0.3, shape) if len(shape) == 2 else np.zeros(shape) for shape in weight_shapes()]
    weights[-1] = head_inverse(np.array([0.2, 1.2, 10.0, 1.2, 0.6]))
    return SCurveNetwork(tuple(weights))


def synthetic_wheels(network: SCurveNetwork, twist: np.ndarray, time: np.ndarray, seed_name: str) -> np.ndarray:
    """Wheel speeds of a step from rest at t = 0 following the network's curve, with noise."""
    change = float(wheel_reference_change(twist))
    wheels = np.outer(s_curve(time, change, network.params(change)) / change, wheel_speeds(twist))
    scale = NOISE * np.abs(wheel_speeds(twist)).max()
    return wheels + generator(0, seed_name).normal(0.0, scale, wheels.shape)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, true_network) -> list:
    """One CSV per recorded step; the first without command columns (target inferred)."""
    folder = tmp_path_factory.mktemp("recordings")
    time = np.arange(0.0, RECORDING_SECONDS, 1.0 / RECORDING_RATE)
    paths = []
    for i, twist in enumerate(RECORDED_TWISTS):
        wheels = synthetic_wheels(true_network, np.array(twist), time, f"tests/scurve/noise/{i}")
        path = folder / f"step_{i}.csv"
        if i == 0:
            rows = ["time,FL,FR,RL,RR"] + [",".join(f"{v:.6f}" for v in (t, *w)) for t, w in zip(time, wheels)]
        else:
            rows = ["time,FL,FR,RL,RR,vx,vy,wz"] + [",".join(f"{v:.6f}" for v in (t, *w, *twist))
                                                   for t, w in zip(time, wheels)]
        path.write_text("\n".join(rows) + "\n")
        paths.append(path)
    return paths


# ---------------------------------------------------------------- the curve


@pytest.mark.parametrize("curve", CURVES, ids=[f"L{c[0]:g}-a{c[1]:.2f}" for c in CURVES])
def test_curve_value_and_slope_are_continuous(curve):
    change, params = split(curve)
    a = params[0]
    brk = curve_break(change, params)
    eps = 1e-9
    for t in (a, float(brk.time)):
        assert abs(s_curve(t + eps, change, params) - s_curve(t - eps, change, params)) < 1e-6 * change
        assert abs(s_curve_slope(t + eps, change, params) - s_curve_slope(t - eps, change, params)) < 1e-5 * params[2]
    # The slope is the derivative of the value everywhere (central differences on a fine grid).
    t = np.linspace(0.0, float(brk.time) * 3 + 1.0, 20001)
    numeric = np.gradient(s_curve(t, change, params), t)
    assert np.max(np.abs(numeric[1:-1] - s_curve_slope(t, change, params)[1:-1])) < 2e-3 * params[2]


@pytest.mark.parametrize("curve", CURVES, ids=[f"L{c[0]:g}-a{c[1]:.2f}" for c in CURVES])
def test_curve_starts_at_zero_rises_monotonically_and_reaches_l(curve):
    change, params = split(curve)
    assert s_curve(0.0, change, params) == 0.0
    assert s_curve(-1.0, change, params) == 0.0 and s_curve_slope(-1.0, change, params) == 0.0
    brk = curve_break(change, params)
    k2 = params[4]
    # The approach decays like exp(-k2 lambda u) after its linear part of P / lambda; with
    # softplus_k(-x) <= exp(-k x) / k and k2 softplus_k2(P) >= log 2 it is within 1e-3 L by P / lambda
    # plus log(1e3 / log 2) / k2 time constants 1 / lambda.
    settle = float(brk.time) + (LINEAR_POINT + math.log(1e3 / math.log(2.0)) / k2) / float(brk.rate)
    t = np.linspace(0.0, settle, 50001)
    s = s_curve(t, change, params)
    assert np.all(np.diff(s) >= 0.0)
    assert np.all(s_curve_slope(t, change, params) > 0.0)
    assert s[-1] >= (1 - 1e-3) * change and s[-1] <= change
    assert s_curve(1e4, change, params) == pytest.approx(change, rel=1e-12)
    # The break hands over at most at 0.8 L, and at b when the ramp is still below that.
    assert float(brk.value) <= 0.8 * change * (1 + 1e-9)
    assert float(brk.time) <= params[1]


def test_wheel_reference_change_formula():
    assert wheel_reference_change(np.array([1.0, 0.0, 0.0])) == pytest.approx(1.0 / WHEEL_RADIUS)
    assert wheel_reference_change(np.array([0.0, -0.5, 0.0])) == pytest.approx(0.5 / WHEEL_RADIUS)
    assert wheel_reference_change(np.array([0.0, 0.0, 2.0])) == pytest.approx(
        2.0 * math.hypot(HALF_WHEELBASE, HALF_TRACK) / WHEEL_RADIUS)
    # The conservative bound of the issue: sqrt((|dvx| - |dwz| Ly)^2 + (|dvy| + |dwz| Lx)^2) / r.
    expected = math.hypot(0.3 - 0.5 * HALF_TRACK, 0.2 + 0.5 * HALF_WHEELBASE) / WHEEL_RADIUS
    assert wheel_reference_change(np.array([-0.3, 0.2, -0.5])) == pytest.approx(expected)


# ---------------------------------------------------------------- the network


def test_network_outputs_stay_within_the_head_bounds_for_any_l():
    rng = generator(0, "tests/scurve/bounds")
    changes = np.concatenate([np.geomspace(1e-4, 1e4, 60), [0.0]])
    for scale in (0.1, 3.0, 30.0):
        network = SCurveNetwork(tuple(rng.normal(0.0, scale, shape) for shape in weight_shapes()))
        a, b, m, k1, k2 = np.moveaxis(network.params(changes), -1, 0)
        low, span = HEADS["a"]
        assert np.all((a >= low) & (a <= low + span))
        assert np.all((b >= a) & (b <= a + HEADS["b"][1]))
        for values, name in ((m, "m"), (k1, "k1"), (k2, "k2")):
            low, span = HEADS[name]
            assert np.all((values >= low) & (values <= low + span)), name
    assert network.params(2.0).shape == (5,)


def test_default_network_is_the_documented_ramp():
    network = default_network()
    for change in (0.1, 5.0, 30.0):
        np.testing.assert_allclose(network.params(change), [DEFAULT_PARAMS[n] for n in PARAM_NAMES], rtol=1e-12)
    # A 1 m/s step (L = 1 / r) is 90 % done after about a second: 1 m/s^2 at the rim.
    change = 1.0 / WHEEL_RADIUS
    t = np.linspace(0.0, 3.0, 30001)
    done = s_curve(t, change, network.params(change)) / change
    assert t[np.argmax(done >= 0.9)] == pytest.approx(1.0, abs=0.1)


def test_network_save_load_round_trip_and_bad_files(tmp_path, true_network):
    path = save_network(true_network, tmp_path / "net.npz", validation_error=0.01)
    loaded = load_network(path)
    np.testing.assert_array_equal(loaded.params(np.array([0.5, 7.0])), true_network.params(np.array([0.5, 7.0])))
    with pytest.raises(InputError, match="file not found"):
        load_network(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not an .npz file"):
        load_network(tmp_path / "junk.npz")
    weights = dict(zip(("W1", "b1", "W2", "b2", "W3", "b3"), true_network.weights))
    np.savez(tmp_path / "shape.npz", schema=np.array("grade.s_curve/1"), input_scale=np.array(10.0),
             **{**weights, "W2": np.zeros((15, 30))})
    with pytest.raises(InputError, match="W2"):
        load_network(tmp_path / "shape.npz")
    np.savez(tmp_path / "schema.npz", schema=np.array("other"), input_scale=np.array(10.0), **weights)
    with pytest.raises(InputError, match="schema"):
        load_network(tmp_path / "schema.npz")


# ---------------------------------------------------------------- the follower


def test_follower_interpolates_the_command_along_the_curve():
    follower = SCurveFollower()
    target = np.array([0.4, -0.2, 0.3])
    follower.command(target)
    change = float(wheel_reference_change(target))
    params = default_network().params(change)
    dt = 0.01
    for step in range(200):
        if step == 20:
            follower.command(target.copy())  # repeating the command does not restart the transition
        twist = follower.advance(dt)
        expected = s_curve((step + 0.5) * dt, change, params) / change * target
        np.testing.assert_allclose(twist, expected, atol=1e-12)
    np.testing.assert_allclose(follower.current, target, atol=1e-3 * np.abs(target).max())


def test_follower_restarts_from_the_current_twist_mid_transition():
    follower = SCurveFollower()
    follower.command(np.array([0.8, 0.0, 0.0]))
    for _ in range(50):
        follower.advance(0.01)
    middle = follower.current
    assert 0.05 < middle[0] < 0.75
    follower.command(np.array([0.0, 0.0, 0.0]))
    np.testing.assert_allclose(follower.current, middle)  # no jump at the new command
    assert follower.advance(0.01)[0] == pytest.approx(middle[0], abs=1e-3)


# ---------------------------------------------------------------- calibration

CURVE_TOLERANCE = 0.02  # max |S_fit - S_true| / L over the recorded steps


@pytest.mark.slow
def test_calibration_recovers_the_curves_from_noisy_recordings(recordings, true_network):
    result = calibrate(recordings, restarts=2, seed=0, iterations=2000)
    assert result.responses == len(RECORDED_TWISTS) and result.restarts == 2
    # Noise of 1 % of the largest wheel speed is at most ~1 % of a step in p(t).
    assert result.validation_error < 0.02 and result.training_error < 0.02
    t = np.linspace(0.0, RECORDING_SECONDS, 601)
    for twist in RECORDED_TWISTS:
        change = float(wheel_reference_change(np.array(twist)))
        fitted = s_curve(t, change, result.network.params(change))
        truth = s_curve(t, change, true_network.params(change))
        assert np.max(np.abs(fitted - truth)) / change < CURVE_TOLERANCE, twist


def test_csv_without_commands_is_one_step_to_the_settled_twist(recordings, true_network):
    (response,) = read_recording(recordings[0])
    assert response.change == pytest.approx(wheel_reference_change(np.array(RECORDED_TWISTS[0])), rel=0.01)
    truth = s_curve(response.time, response.change, true_network.params(response.change)) / response.change
    assert np.sqrt(np.mean((response.progress - truth) ** 2)) < 0.03


def write_bag(path, true_network: SCurveNetwork, names: list[str], sign: float = 1.0) -> list[tuple]:
    """A ROS 1 bag as the real robot records it: /joint_states at 100 Hz (wheels among other joints),
    /mobile_base_controller/cmd_vel at 100 Hz with a second publisher's zeros at 10 Hz."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC)
    joint_state, header, stamp = (store.types[t] for t in ("sensor_msgs/msg/JointState", "std_msgs/msg/Header",
                                                          "builtin_interfaces/msg/Time"))
    twist_type, vector = store.types["geometry_msgs/msg/Twist"], store.types["geometry_msgs/msg/Vector3"]
    steps = [(1.0, np.zeros(3), np.array([0.5, 0.0, 0.0])), (3.5, np.array([0.5, 0.0, 0.0]), np.array([0.0, 0.3, 0.0]))]
    start = 1_700_000_000.0
    with Writer(path) as writer:
        states = writer.add_connection("/joint_states", joint_state.__msgtype__, typestore=store)
        commands = writer.add_connection("/mobile_base_controller/cmd_vel", twist_type.__msgtype__, typestore=store)
        for k in range(600):
            t = k / 100.0
            twist = np.zeros(3)
            for begin, before, after in steps:
                if t >= begin:
                    change = float(wheel_reference_change(after - before))
                    twist = before + s_curve(t - begin, change, true_network.params(change)) / change * (after - before)
            velocities = np.concatenate([[0.1, 0.2], sign * wheel_speeds(twist)])
            message = joint_state(header=header(seq=k, stamp=stamp(sec=0, nanosec=0), frame_id=""),
                                  name=["torso_lift_joint", "head_1_joint", *names], position=np.zeros(6),
                                  velocity=velocities, effort=np.zeros(6))
            stamp_ns = int((start + t + 0.003) * 1e9)
            writer.write(states, stamp_ns, store.serialize_ros1(message, joint_state.__msgtype__))
            command = next((after for begin, _, after in reversed(steps) if t >= begin), None)
            if command is not None:
                msg = twist_type(linear=vector(x=command[0], y=command[1], z=0.0), angular=vector(x=0.0, y=0.0,
                                                                                                  z=command[2]))
                writer.write(commands, int((start + t) * 1e9), store.serialize_ros1(msg, twist_type.__msgtype__))
            if k % 10 == 5:  # the idle publisher's zero, superseded 5 ms later
                zero = twist_type(linear=vector(x=0.0, y=0.0, z=0.0), angular=vector(x=0.0, y=0.0, z=0.0))
                writer.write(commands, int((start + t + 0.005) * 1e9) - 1,
                             store.serialize_ros1(zero, twist_type.__msgtype__))
    return steps


def test_reads_step_responses_from_a_ros1_bag(tmp_path, true_network):
    path = tmp_path / "steps.bag"
    names = ["wheel_front_left_joint", "wheel_front_right_joint", "wheel_rear_left_joint", "wheel_rear_right_joint"]
    steps = write_bag(path, true_network, names)
    responses = read_recording(path)
    assert len(responses) == 2
    for response, (_, before, after) in zip(responses, steps):
        change = float(wheel_reference_change(after - before))
        assert response.change == pytest.approx(change)
        # The joint states are stamped 3 ms after the wheel speeds they carry were commanded.
        truth = s_curve(response.time - 0.003, change, true_network.params(change)) / change
        np.testing.assert_allclose(response.progress, truth, atol=1e-5)  # float seconds near 1.7e9 s
        assert response.time[-1] > 2.0
    # Wheels whose speeds are negative when rolling forward are reported, not fitted.
    write_bag(tmp_path / "flipped.bag", true_network, names, sign=-1.0)
    with pytest.raises(InputError, match="settle at -1.00"):
        read_recording(tmp_path / "flipped.bag")


def test_unreadable_recordings(tmp_path, realdata):
    with pytest.raises(InputError, match="recording not found"):
        read_recording(tmp_path / "none.csv")
    (tmp_path / "columns.csv").write_text("time,FL,FR,RL\n0,0,0,0\n1,0,0,0\n")
    with pytest.raises(InputError, match=r"missing columns \['RR'\]"):
        read_recording(tmp_path / "columns.csv")
    (tmp_path / "text.csv").write_text("time,FL,FR,RL,RR\n0,0,0,0,0\n1,0,x,0,0\n")
    with pytest.raises(InputError, match="line 3"):
        read_recording(tmp_path / "text.csv")
    (tmp_path / "junk.bag").write_bytes(b"#ROSBAG V2.0\nnot really")
    with pytest.raises(InputError, match="not a readable ROS 1 .bag file or ROS 2 bag folder"):
        read_recording(tmp_path / "junk.bag")
    # A real ROS 2 bag with a JointState topic, but no wheel joints in it.
    with pytest.raises(InputError, match="wheel joints"):
        read_recording(realdata / "rosbag2" / "test_bag_mcap")
    with pytest.raises(InputError, match="non-decreasing"):
        step_responses(np.array([0.0, -1.0]), np.zeros((2, 4)), None, "memory")


@pytest.mark.slow
def test_cli_calibrate_writes_a_loadable_network(tmp_path, recordings):
    out = tmp_path / "model.npz"
    result = run_grade("robot", "calibrate", *map(str, recordings[:4]), "--out", str(out), "--restarts", "2",
                       "--iterations", "150", "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert "validation error" in result.stdout
    network = load_network(out)
    assert network.params(5.0).shape == (5,)
    reported = float(result.stdout.split("validation error")[1].split()[0])
    assert float(np.load(out)["validation_error"]) == pytest.approx(reported, abs=1e-4)
    result = run_grade("robot", "calibrate", str(tmp_path / "none.csv"), "--out", str(tmp_path / "x.npz"))
    assert result.returncode == 2 and "recording not found" in result.stderr
    assert not (tmp_path / "x.npz").exists()
    # one step of two samples: nothing to hold out for validation (it raised a ValueError from numpy)
    (tmp_path / "short.csv").write_text("time,FL,FR,RL,RR\n0,0,0,0,0\n0.1,1,1,1,1\n")
    result = run_grade("robot", "calibrate", str(tmp_path / "short.csv"), "--out", str(tmp_path / "x.npz"))
    assert_refused(result, "too little to fit and validate on")
    assert not (tmp_path / "x.npz").exists()


def test_calibration_is_deterministic_per_seed(recordings):
    responses = [r for path in recordings[:3] for r in read_recording(path)]
    first, again = (fit_network(responses, restarts=2, seed=5, iterations=20) for _ in range(2))
    for a, b in zip(first.network.weights, again.network.weights):
        np.testing.assert_array_equal(a, b)
    other = fit_network(responses, restarts=2, seed=6, iterations=20)
    assert not np.array_equal(first.network.weights[0], other.network.weights[0])
