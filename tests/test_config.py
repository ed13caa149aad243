from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CONFIGS, ROOT, assert_refused, run_grade

from core.config import NOT_AVAILABLE, ExperimentConfig, input_paths
from core.config_io import _models_at, apply_overrides, load_experiment
from core.errors import ConfigError
from core.robot_catalogue import KINDS
from core.yaml_io import MAX_YAML_DEPTH, read_yaml
from pipeline.batch_config import MAX_BATCH_EXPERIMENTS, BatchConfig, expand_batch, load_batch, variant_seeds
from pipeline.benchmark_config import load_slam_benchmark
from pipeline.cli import main


def write(tmp_path: Path, data: dict, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def demo_data() -> dict:
    return yaml.safe_load((CONFIGS / "demo.yaml").read_text())


def test_demo_config_is_valid_and_small():
    config = load_experiment(CONFIGS / "demo.yaml")
    assert config.robot.kind == "uav"
    assert config.environment.source == "procedural"
    assert config.simulation.duration == 25.0
    cam = config.robot.sensors.cameras[0]
    assert (cam.width, cam.height) == (640, 480)


def test_defaults_follow_the_paper():
    config = ExperimentConfig(robot={"sensors": {"imus": [{"name": "imu"}]}})  # the smallest valid experiment
    assert config.simulation.physics_hz == 240
    assert config.simulation.duration == 60.0 and config.simulation.bootstrap == 1.0
    rates = config.simulation.rates
    assert (rates.clock_hz, rates.tf_hz, rates.joint_states_hz, rates.pose_hz, rates.odom_hz) == (240, 120, 120, 60, 60)
    uav = config.robot.uav
    assert (uav.max_speed, uav.max_tilt_deg, uav.roll_pitch_rate_deg, uav.yaw_rate_deg) == (0.5, 25, 40, 30)
    assert (config.humans.max_tries, config.humans.contact_threshold) == (99, 200)


def test_misspelled_key_names_file_line_and_suggestion(tmp_path):
    data = demo_data()
    data["simulation"]["physcs_hz"] = data["simulation"].pop("physics_hz")
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    text = str(err.value)
    assert str(path) in text
    assert "simulation.physcs_hz" in text
    assert "did you mean 'physics_hz'" in text
    assert "(line " in text


def test_misspelled_nested_list_key(tmp_path):
    data = demo_data()
    data["robot"]["sensors"]["cameras"][0]["widht"] = 320
    with pytest.raises(ConfigError, match=r"robot\.sensors\.cameras\.0\.widht.*did you mean 'width'"):
        load_experiment(write(tmp_path, data))


def test_wrong_type_names_key_and_value(tmp_path):
    data = demo_data()
    data["simulation"]["duration"] = "long"
    with pytest.raises(ConfigError, match=r"simulation\.duration.*'long'"):
        load_experiment(write(tmp_path, data))


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("robot.sensors.cameras.0.rate_hz=7", r"rate_hz = 7 Hz must divide simulation.physics_hz = 240"),
        ("simulation.rates.tf_hz=100", r"tf_hz = 100 Hz must divide"),
        ("robot.sensors.imus.0.rate_hz=480", r"must divide"),
        ("simulation.duration=-1", r"simulation.duration.*greater than 0"),
        ("simulation.duration=0.001", r"whole number of physics steps"),
        ("humans.count.min=50", r"humans.count.*min \(50\) must be <= max \(5\)"),
        ("robot.sensors.cameras.0.fov_deg=0", r"fov_deg must be in \(0, 180\)"),
        ("robot.sensors.cameras.0.near=200", r"near \(200.0\) must be < far"),
        ("robot.sensors.imus.0.mount.link=wing", r"'wing' is not a link of robot 'uav'"),
        ("environment.source=front3d", r"needs a 'path'"),
        ("environment.source=front3d", r"environment"),
        ("exploration.planner=waypoints", r"needs a non-empty 'waypoints'"),
    ],
)
def test_physical_invariants(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_experiment(CONFIGS / "demo.yaml", [override])


def test_overrides_parse_yaml_values():
    config = load_experiment(
        CONFIGS / "demo.yaml",
        ["simulation.duration=2.5", "robot.kind=tiago_omni", "robot.sensors.cameras.0.mount.link=head_2_link",
         "robot.sensors.imus=[]", "recording.bag_formats=[ros1, ros2]", "seed=7"],
    )
    assert config.simulation.duration == 2.5
    assert config.robot.kind == "tiago_omni"
    assert config.robot.sensors.imus == []
    assert config.recording.bag_formats == ["ros1", "ros2"]
    assert config.seed == 7


def test_override_errors():
    with pytest.raises(ConfigError, match="key.path=value"):
        apply_overrides({}, ["novalue"])
    with pytest.raises(ConfigError, match="out of range"):
        apply_overrides({"a": [1]}, ["a.3=2"])


def test_missing_input_path_is_an_error_relative_to_config_folder(tmp_path):
    data = demo_data()
    data["environment"] = {"source": "front3d", "path": "houses/missing.json"}
    path = write(tmp_path, data)
    with pytest.raises(ConfigError, match=r"environment\.path.*does not exist.*houses/missing\.json"):
        load_experiment(path)
    (tmp_path / "houses").mkdir()
    (tmp_path / "houses" / "missing.json").write_text("{}")
    config = load_experiment(path)
    assert config.environment.path == (tmp_path / "houses" / "missing.json").resolve()


def test_every_input_path_is_read_from_the_config_folder_and_checked(tmp_path):
    """Every input-path field, in every section and every robot of a multi-robot run, is resolved against the
    config's folder and checked; `robot` (which then mirrors the first of `robots`) is not listed twice."""
    data = demo_data()
    robot = data.pop("robot")
    data.update(
        environment={"source": "mesh", "path": "env.obj"},
        humans={"source": "gltf", "paths": ["walk.glb", "run.glb"], "count": {"min": 1, "max": 1}},
        animals={"source": "gltf", "paths": ["dog.glb"]},
        flying_objects={"source": "mesh", "paths": ["cup.obj"]},
        robots=[robot, {**robot, "tiago": {"s_curve": "scurve.npz"}}],
        recording={"class_map": "classes.yaml"},
        render={"environment": "sky.hdr"},
    )
    path = write(tmp_path, data)
    config = load_experiment(path, check_paths=False)
    expected = {"environment.path": "env.obj", "humans.paths.0": "walk.glb", "humans.paths.1": "run.glb",
                "animals.paths.0": "dog.glb", "flying_objects.paths.0": "cup.obj",
                "robots.1.tiago.s_curve": "scurve.npz", "recording.class_map": "classes.yaml",
                "render.environment": "sky.hdr"}
    assert input_paths(config) == {key: tmp_path.resolve() / name for key, name in expected.items()}
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert err.value.field == "environment.path" and "also missing: robots.1.tiago.s_curve" in str(err.value)


def test_not_a_mapping_and_bad_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_experiment(bad)
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_experiment(bad)
    with pytest.raises(ConfigError, match="file not found"):
        load_experiment(tmp_path / "nope.yaml")


def test_batch_expands_seeds_and_variants():
    batch = load_batch(CONFIGS / "batch-example.yaml")
    experiments = expand_batch(batch, CONFIGS / "batch-example.yaml")
    assert len(experiments) == 6
    names = [e.name for e in experiments]
    assert len(set(names)) == 6
    horizontal = [e for e in experiments if e.name.startswith("horizontal")]
    assert all(e.robot.uav.lock_roll_pitch for e in horizontal)
    assert sorted({e.seed for e in experiments}) == [1, 2, 3]
    assert all(str(e.output_dir).startswith("runs/batch-example/") for e in experiments)


def test_batch_variant_error_names_variant(tmp_path):
    (tmp_path / "demo.yaml").write_text((CONFIGS / "demo.yaml").read_text())
    path = write(tmp_path, {"base": "demo.yaml", "variants": [{"name": "bad", "set": {"simulation.physics_hz": 100}}]},
                 "batch.yaml")
    with pytest.raises(ConfigError, match="variant 'bad'.*must divide"):
        expand_batch(load_batch(path), path)


def test_robot_links_cover_demo_mounts():
    config = load_experiment(CONFIGS / "demo.yaml")
    for cam in config.robot.sensors.cameras:
        assert cam.mount.link in KINDS["uav"].links(config.robot)


# ---------------------------------------------------------------- no setting that does nothing


def validate_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, path: Path,
                 *overrides: str) -> tuple[int, str]:
    """`grade config validate` through the console-script entry point, in process (a subprocess per case
    would cost a second of imports each): exit code and the message on one line."""
    args = [arg for text in overrides for arg in ("--set", text)]
    monkeypatch.setattr(sys, "argv", ["grade", "config", "validate", str(path), *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value.code, " ".join(capsys.readouterr().err.split())


def test_isaac_backend_is_refused_by_validate(tmp_path, monkeypatch, capsys):
    data = demo_data()
    data["simulation"]["backend"] = "isaac"
    code, text = validate_cli(monkeypatch, capsys, write(tmp_path, data))
    assert code == 2
    assert "simulation.backend (line" in text
    assert "backend 'isaac' is not available in this version (only 'embedded')" in text
    assert "Traceback" not in text


def test_postprocess_section_validates_with_grade_defaults(tmp_path):
    data = demo_data()
    data["postprocess"] = {"imu": {}, "depth": {"model": "kinect"}, "blur": {"exposure": None}}
    config = load_experiment(write(tmp_path, data))
    post = config.postprocess
    assert post.enabled and post.rolling_shutter is None
    assert (post.imu.gyro_noise_density, post.imu.accel_random_walk, post.imu.accel_bias_correlation_time) == (
        3.394e-4, 6e-3, 300.0)
    assert post.blur.exposure is None and post.blur.max_exposure == 0.1
    assert not load_experiment(CONFIGS / "demo.yaml").postprocess.enabled  # nothing applied unless asked


@pytest.mark.parametrize("override, message", [
    ("postprocess.imu.accel_noise_densty=0.003", "did you mean 'accel_noise_density'"),
    ("postprocess.depth={model: kinect, min_range: 4, max_range: 3}", "min_range"),
    ("postprocess.blur.sub_poses=1", "postprocess.blur.sub_poses"),
])
def test_bad_postprocess_settings_are_refused(override, message, monkeypatch, capsys):
    code, text = validate_cli(monkeypatch, capsys, CONFIGS / "demo.yaml", override)
    assert code == 2
    assert message in text


def test_batch_executor_is_validated(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, {"base": "demo.yaml", "seeds": [1], "executor": {"kind": "slurm", "workers": 0}},
                 "batch.yaml")
    code, text = validate_cli(monkeypatch, capsys, path)
    assert code == 2 and "executor.workers (line" in text


def test_removed_keys_are_not_in_the_schema():
    for model, keys in NOT_AVAILABLE.items():
        assert not set(keys) & set(model.model_fields), model.__name__


def test_every_config_file_validates():
    """Every shipped config passes the schema; only paper-indoor's dataset paths may be missing (the user
    edits them to point at their copies)."""
    files = sorted(CONFIGS.glob("*.yaml"))
    assert {f.name for f in files} >= {"demo.yaml", "demo-tiago.yaml", "paper-indoor.yaml", "batch-example.yaml",
                                       "slam-benchmark.yaml", "grade-dataset.yaml"}
    for path in files:
        data = yaml.safe_load(path.read_text())
        if path.name == "grade-dataset.yaml":  # draws houses from the user's 3D-Front folder: the schema only
            assert sum(v.count for v in load_batch(path).variants) == 342
        elif "base" in data:
            assert expand_batch(load_batch(path), path)
        elif "methods" in data:
            assert load_slam_benchmark(path).sequences
        elif path.name == "paper-indoor.yaml":
            load_experiment(path, check_paths=False)
        else:
            load_experiment(path)


def _fields(model: type, prefix: str = "") -> list[tuple[str, str]]:
    """(key path, field name) of every field of a model and the models inside it."""
    found = []
    for name in model.model_fields:
        found.append((prefix + name, name))
        for inner in _models_at(model, (name,)):
            found += _fields(inner, f"{prefix}{name}.")
    return found


def _models(model: type) -> set[type]:
    """`model` and every model inside it."""
    return {model} | {inner for name in model.model_fields for found in _models_at(model, (name,))
                      for inner in _models(found)}


def test_every_config_key_is_read_outside_the_schema():
    """A coarse guard against settings that do nothing: each field name must be read (`.name`, `"name"`
    or `'name'`) somewhere in the source outside the schema (the core/config package and the models'
    classes, such as the batch document's beside its command). It cannot tell which model a common name like
    `min` belongs to, so a new field still needs a test of its effect."""
    sources = [p for package in ("core", "pipeline", "asset_converters", "placement", "simulation", "postprocess")
               for p in sorted((ROOT / package).rglob("*.py")) if ROOT / "core" / "config" not in p.parents]
    text = "\n".join(p.read_text() for p in sources)
    for model in _models(ExperimentConfig) | _models(BatchConfig):
        text = text.replace(inspect.getsource(model), "")
    unread = [key for model in (ExperimentConfig, BatchConfig) for key, name in _fields(model)
              if not re.search(rf"\.{name}\b|[\"']{name}[\"']", text)]
    assert unread == []


def test_an_experiment_without_sensors_records_nothing_and_is_refused():
    with pytest.raises(ValueError, match="at least one sensor"):
        ExperimentConfig()


@pytest.mark.parametrize("override, message", [
    ("seed=true", "seed"),  # a boolean is not a seed
    (f"seed={2**31}", str(2**31 - 1)),  # beyond what USD's int attribute stores
    ("simulation.duration=.inf", "simulation.duration"),
    ("simulation.duration=.nan", "simulation.duration"),
    ("simulation.duration=3601", "simulation.duration"),
    ("recording.depth_npy=1", "recording.depth_npy"),  # booleans are true/false, not 1
    ("robot.sensors.cameras.0.width=7681;robot.sensors.cameras.0.height=4320", "pixels"),
    # each of these ran out of memory with a traceback or ran for hours before anything was written
    ("robot.sensors.lidar={name: l, channels: 1025, horizontal_resolution_deg: 0.0879}", "4,194,304 a LiDAR"),
    ("exploration.map_resolution=0.019", "exploration.map_resolution"),
    ("robot.sensors.cameras.0.near=9e-5", "cameras.0.near"),
    ("robot.sensors.cameras.0.far=1.1e6", "cameras.0.far"),
    ("humans.count={min: 0, max: 1001}", "at most 1,000 humans"),
    ("flying_objects.count={min: 0, max: 1001}", "at most 1,000 flying objects"),
    ("environment.rooms=65", "environment.rooms"),
    ("environment.furniture={min: 0, max: 501}", "at most 500 furniture pieces"),
    ("postprocess.rolling_shutter={readout_mean: 1.5}", "rolling_shutter.readout_mean"),
])
def test_values_out_of_what_the_stages_handle_are_refused(override, message):
    with pytest.raises(ConfigError) as err:
        load_experiment(CONFIGS / "demo.yaml", override.split(";"))
    assert message in str(err.value)


def test_largest_accepted_values_validate():
    config = load_experiment(CONFIGS / "demo.yaml", [f"seed={2**31 - 1}", "simulation.duration=3600",
                                                     "robot.sensors.cameras.0.width=7680",
                                                     "robot.sensors.cameras.0.height=4320",
                                                     "robot.sensors.lidar={name: l, channels: 1024, "
                                                     "horizontal_resolution_deg: 0.0879}",  # 4096 columns
                                                     "exploration.map_resolution=0.02",
                                                     "robot.sensors.cameras.0.near=1e-4",
                                                     "robot.sensors.cameras.0.far=1e6",
                                                     "humans.count={min: 0, max: 1000}",
                                                     "flying_objects.count={min: 0, max: 1000}",
                                                     "environment.rooms=64"])
    assert config.seed == 2**31 - 1 and config.simulation.duration == 3600
    assert config.robot.sensors.lidar.channels == 1024 and config.environment.rooms == 64


def test_batch_variants_with_counts_and_seeded_draws(tmp_path):
    houses = tmp_path / "houses"
    houses.mkdir()
    for name in ("a.json", "b.json", "c.json", "notes.txt"):
        (houses / name).write_text("{}")
    (tmp_path / "demo.yaml").write_text((CONFIGS / "demo.yaml").read_text())
    batch_file = write(tmp_path, {"base": "demo.yaml", "seeds": [5], "variants": [
        {"name": "plain"},
        {"name": "drawn", "count": 12, "draw": {
            "humans.count.max": {"min": 3, "max": 9}, "robot.uav.max_speed": [0.25, 0.5],
            "environment.textures": {"folder": "houses", "glob": "*.json"}}}]}, "batch.yaml")
    experiments = expand_batch(load_batch(batch_file), batch_file)
    assert [e.name for e in experiments] == ["plain-seed5"] + [f"drawn-seed{s}" for s in range(5, 17)]
    drawn = experiments[1:]
    assert {e.humans.count.max for e in drawn} <= set(range(3, 10)) and len({e.humans.count.max for e in drawn}) > 2
    assert {e.robot.uav.max_speed for e in drawn} == {0.25, 0.5}
    assert {e.environment.textures.name for e in drawn} <= {"a.json", "b.json", "c.json"}
    again = expand_batch(load_batch(batch_file), batch_file)  # seeded by seed and variant: the same draws
    assert [e.model_dump() for e in again] == [e.model_dump() for e in experiments]
    empty = write(tmp_path, {"base": "demo.yaml", "variants": [
        {"name": "none", "draw": {"environment.textures": {"folder": "houses", "glob": "*.usd"}}}]}, "empty.yaml")
    with pytest.raises(ConfigError, match="no files match"):
        expand_batch(load_batch(empty), empty)


def test_an_experiment_command_given_a_batch_file_says_to_run_it_with_grade_batch():
    with pytest.raises(ConfigError, match="batch config.*grade batch") as info:
        load_experiment(CONFIGS / "batch-example.yaml")
    assert info.value.field == "base"
    load_batch(CONFIGS / "batch-example.yaml")  # what it is


# Hostile YAML: each is refused by `grade config validate` while it is read (bounded time and memory), naming the
# file and what was over its limit.
def _alias_bomb(width: int, levels: int) -> str:
    """A billion-laughs document: each level a list of `width` aliases to the level below."""
    text = "l0: &l0 [" + ", ".join(["x"] * width) + "]\n"
    return text + "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]\n" for i in range(1, levels))


HOSTILE_YAML = {
    "alias_cycle_list": ("a: &a [*a]\n", ["*a", "line 1", "cycle"]),
    "alias_cycle_map": ("a: &a {b: [1, *a]}\n", ["*a", "line 1", "cycle"]),
    "alias_cycle_merge": ("a: &a {<<: *a}\n", ["*a", "cycle"]),
    "alias_cycle_deep": ("top:\n  a: &a\n    b:\n      c:\n        - *a\n", ["*a", "line 5", "cycle"]),
    "alias_bomb_lists": (_alias_bomb(9, 10), ["100,000 values", "line 6", "alias"]),
    "alias_bomb_wide": (_alias_bomb(1000, 2), ["100,000 values", "line 2", "alias"]),
    "alias_bomb_maps": ("m0: &m0 {" + ", ".join(f"k{j}: x" for j in range(10)) + "}\n" + "".join(
        f"m{i}: &m{i} {{" + ", ".join(f"k{j}: *m{i - 1}" for j in range(10)) + "}\n" for i in range(1, 9)),
        ["100,000 values", "alias"]),
    "nested_lists": ("a: " + "[" * 5000 + "]" * 5000 + "\n", ["line 1", "nest"]),
    "nested_lists_just_over": ("a: " + "[" * 50 + "]" * 50 + "\n", ["line 1", "deeper than 50"]),
    "nested_flow_maps": ("a: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", ["line 1", "nest"]),
    "nested_block_maps": ("".join(" " * i + "k:\n" for i in range(300)), ["line 51", "deeper than 50"]),
    "nested_through_aliases": ("a0: &a0 " + "[" * 40 + "x" + "]" * 40 + "\n" + "".join(
        f"a{k}: &a{k} " + "[" * 40 + f"*a{k - 1}" + "]" * 40 + "\n" for k in range(1, 60)),
        ["line 2", "deeper than 50", "alias"]),
    "many_values": ("a: [" + "1, " * 150_000 + "]\n", ["100,000 values", "line 1"]),
    "huge_one_line": ("a: " + "x" * 10_000_000 + "\n", ["1,000,000 bytes", "10,000,004"]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_YAML))
def test_hostile_yaml_is_refused_while_read(name, tmp_path):
    text, mentions = HOSTILE_YAML[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    assert_refused(run_grade("config", "validate", str(path)), f"{name}.yaml", *mentions)


@pytest.mark.parametrize("make", [lambda p: os.mkfifo(p), lambda p: p.symlink_to("/dev/zero")],
                         ids=["fifo", "dev_zero"])
def test_a_config_that_is_not_a_regular_file_is_refused_unread(make, tmp_path):
    """A FIFO with no writer or a device would block or never end; both are refused before they are read."""
    make(tmp_path / "c.yaml")
    for command in (["config", "validate"], ["generate"], ["batch"]):
        assert_refused(run_grade(*command, str(tmp_path / "c.yaml")), "c.yaml", "not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_yaml_within_the_limits_loads_with_aliases_merges_and_lines(tmp_path):
    path = tmp_path / "ok.yaml"
    nested = "[" * (MAX_YAML_DEPTH - 1) + "1" + "]" * (MAX_YAML_DEPTH - 1)
    path.write_text(f"base: &b {{x: 1, y: [2, 3]}}\nmerged:\n  <<: *b\n  z: 4\nshared: [*b, *b]\ndeep: {nested}\n")
    data, lines = read_yaml(path)
    assert data["merged"] == {"x": 1, "y": [2, 3], "z": 4} and data["shared"] == [data["base"]] * 2
    assert lines[("merged", "z")] == 4 and lines[("shared",)] == 5


def _batch(tmp_path: Path, seeds: list[int], variants: list[dict]) -> Path:
    (tmp_path / "demo.yaml").write_text((CONFIGS / "demo.yaml").read_text())
    return write(tmp_path, {"base": "demo.yaml", "seeds": seeds, "variants": variants,
                            "output_dir": str(tmp_path / "out")}, "batch.yaml")


HOSTILE_BATCHES = {
    "no_seeds": ([], [{"name": "v"}], ["seeds", "at least one seed"]),
    "no_seeds_with_count": ([], [{"name": "v", "count": 3}], ["seeds", "at least one seed"]),
    "huge_count": ([1], [{"name": "v", "count": 100_000_000}], ["variants.0.count", "10000"]),
    "counts_past_the_last_seed": ([2**31 - 3], [{"name": "v", "count": 5}], ["variants.0.count", str(2**31 - 1)]),
    "product_of_seeds_and_variants": (list(range(200)), [{"name": f"v{i}"} for i in range(200)],
                                      ["variants", "40,000 experiments", "10,000"]),
    "sum_of_counts": ([1], [{"name": f"v{i}", "count": 9000} for i in range(3)],
                      ["variants", "27,000 experiments", "10,000"]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_BATCHES))
def test_batch_limits_are_checked_before_expansion(name, tmp_path):
    seeds, variants, mentions = HOSTILE_BATCHES[name]
    path = _batch(tmp_path, seeds, variants)
    for command in ("config", "validate"), ("batch",):
        assert_refused(run_grade(*command, str(path)), "batch.yaml", *mentions)
    assert not (tmp_path / "out").exists()


def test_a_batch_at_its_limit_validates():
    batch = BatchConfig.model_validate({"base": "demo.yaml", "seeds": [1, 2], "variants": [
        {"name": "a", "count": MAX_BATCH_EXPERIMENTS // 2}, {"name": "b", "count": MAX_BATCH_EXPERIMENTS // 2}]})
    assert sum(len(variant_seeds(batch, v)) for v in batch.variants) == MAX_BATCH_EXPERIMENTS


@pytest.mark.parametrize(("executor", "key", "limit"), [
    ({"workers": 10_001}, "executor.workers", "10000"),
    ({"cpus_per_job": 1025}, "executor.cpus_per_job", "1024"),  # a Ray task asking for more waits for ever
    ({"threads_per_job": 1025}, "executor.threads_per_job", "1024"),
    ({"kind": "ray", "gpus_per_job": 65}, "executor.gpus_per_job", "64"),
    ({"kind": "slurm", "slurm_mem_gb": 1e308}, "executor.slurm_mem_gb", "65536"),
    ({"kind": "slurm", "slurm_time_min": 525_601}, "executor.slurm_time_min", "525600"),
])
def test_executor_resources_beyond_one_machine_are_refused(executor, key, limit, tmp_path):
    path = _batch(tmp_path, [1], [{"name": "v"}])
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "executor": executor}))
    assert_refused(run_grade("config", "validate", str(path)), "batch.yaml", key, limit)
