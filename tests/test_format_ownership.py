"""Each artifact format is defined once: its file name appears in code only in its format module (an asset
package's files: only in the package layout, core.assets.layout), and every format module has a writer
and a reader. Other modules use the module's constants and functions."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("core", "asset_converters", "placement", "simulation", "postprocess", "export", "replay", "evaluation", "pipeline", "benchmarks")
# File name -> the one module allowed to spell it (model, writer, reader), with its writer and reader.
FORMATS = {
    "meta.json": ("core/formats/asset_meta.py", "write_meta", "read_meta"),
    "occupancy.npz": ("core/formats/occupancy.py", "save_occupancy", "read_occupancy"),
    "animation.npz": ("core/assets/animation.py", "save_animation", "load_animation"),
    "semantics.json": ("core/formats/semantics.py", "write_semantics", "read_semantics"),
    "placement.json": ("core/formats/placement.py", "write_placement", "load_placement"),
    "scene.usda": ("core/formats/scene_layout.py", "add_package_reference", "read_scene_layout"),
    "run.json": ("core/formats/run_info.py", "write_run_info", "read_run_info"),
    "MANIFEST.json": ("core/formats/manifest.py", "write_manifest", "read_manifest"),
    "frames.jsonl": ("core/formats/frames.py", "FramesWriter", "read_frames"),
    "instances.json": ("core/formats/instances.py", "write_instances", "read_instances"),
    "poses.tum": ("core/formats/tum.py", "TumWriter", "read_tum"),
    "states.npz": ("core/formats/states.py", "save_states", "load_states"),
    "imu.npz": ("core/formats/imu.py", "save_imu", "read_imu"),
    "humans.json": ("core/formats/humans.py", "write_humans_document", "read_humans_document"),
    "postprocess.json": ("core/formats/postprocess.py", "write_postprocess_record", "read_postprocess_record"),
    "blur.jsonl": ("core/formats/postprocess.py", "BlurLogWriter", "read_blur_log"),
    "export.json": ("core/formats/export.py", "write_export_document", "read_export_document"),
    "DATASET.md": ("core/formats/dataset_card.py", "write_dataset_card", "read_dataset_card"),
    "classes.yaml": ("core/formats/class_map.py", "write_class_map", "read_class_map"),
    "replay.json": ("core/formats/replay_report.py", "write_replay_report", "read_replay_report"),
    "batch.json": ("core/formats/batch_state.py", "write_batch_state", "read_batch_state"),
    "metrics.json": ("core/formats/slam_metrics.py", "write_slam_metrics", "read_slam_metrics"),
    "runner.json": ("core/formats/runner.py", "write_runner_record", "read_runner_record"),
}
LAYOUT = "core/assets/layout.py"
# The files of an asset package: their names are spelled in the package layout alone.
PACKAGE_FILES = ("asset.usdc", "meta.json", "collision.stl", "trace.stl", "animation.npz", "occupancy.npz",
                 "semantics.json")


def _speller(name: str) -> str:
    return LAYOUT if name in PACKAGE_FILES else FORMATS[name][0]


def _string_constants(path: Path) -> set[str]:
    """Every string literal in the module's code (docstrings and comments excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_only_the_format_module_names_its_file():
    strays = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        strings = _string_constants(path)
        for name in sorted({*FORMATS, *PACKAGE_FILES}):
            owner = _speller(name)
            if rel != owner and any(s == name or s.endswith("/" + name) for s in strings):
                strays.append(f"{rel} spells {name!r} (use {owner})")
    assert not strays, "\n".join(strays)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_module_has_its_writer_and_reader(name):
    owner, writer, reader = FORMATS[name]
    module = importlib.import_module(owner.removesuffix(".py").replace("/", "."))
    assert callable(getattr(module, writer, None)), f"{owner} has no {writer}"
    assert callable(getattr(module, reader, None)), f"{owner} has no {reader}"
    assert name in _string_constants(ROOT / _speller(name))
