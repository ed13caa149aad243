"""The documentation: the site builds without a warning, the README keeps its shape and its links, and the
README's five-minute tour runs as written on a demo recording."""

from __future__ import annotations

import html
import importlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import run_grade

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PACKAGES = ("core", "pipeline", "asset_converters", "placement", "simulation", "postprocess", "export", "replay",
            "evaluation")
TOP_FOLDERS = (*PACKAGES, "configs", "tests", "benchmarks", "docs")
CONFIG_SECTIONS = ("simulation", "postprocess")  # packages whose names are config sections too
FILE_TYPES = ("json", "jsonl", "png", "yaml", "npz", "usda", "usdc")  # placement.json is a file, not a module
MAX_README_LINES = 200
TWO_COMMANDS = ["make demo", "make test"]
TOUR_START = "<!-- --8<-- [start:tour] -->"
TOUR_END = "<!-- --8<-- [end:tour] -->"
# The tour's first line puts .venv's `grade` on the path; the suite may run from another environment.
ACTIVATE = "source .venv/bin/activate"
# The tour works on `make demo`'s run (26 s of simulation); here on a short, small recording of the same config
# so that the whole tour runs in well under a minute. The UAV takes off first and sets off after about 2.6 s: SLAM's
# trajectory can be aligned to the ground truth only once it has moved sideways.
SHORT_DEMO = ["simulation.duration=2", "simulation.bootstrap=0.25", "robot.sensors.cameras.0.rate_hz=10",
              "robot.sensors.cameras.0.width=320", "robot.sensors.cameras.0.height=240"]
QUIET_ENV = {**os.environ, "GRADE_QUIET": "1", "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "120"}
# The widest code-block line: the theme shows 80 columns, docs/stylesheets/extra.css widens the page to show 102 on
# a screen 1400 px wide, so a longer line scrolls sideways.
CODE_COLUMNS = 100
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def code_blocks(markdown: str, language: str = "bash") -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", markdown, re.DOTALL | re.MULTILINE)


def commands(block: str) -> list[str]:
    """The block's shell commands, without comments, continuation lines joined."""
    joined = block.replace("\\\n", " ")
    lines = (line.split("#", 1)[0].strip() for line in joined.splitlines())
    return [" ".join(line.split()) for line in lines if line]


def tour() -> str:
    text = README.read_text()
    assert text.count(TOUR_START) == 1 and text.count(TOUR_END) == 1
    return text.split(TOUR_START, 1)[1].split(TOUR_END, 1)[0]


def test_site_builds_strictly_with_the_generated_reference(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, env=QUIET_ENV, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]

    def page(name: str) -> str:
        """The page's text as a reader sees it (highlighted code is split into tags)."""
        return html.unescape(re.sub(r"<[^>]+>", "", (site / name / "index.html").read_text()))

    # The home page includes the README's tour (one source for both).
    home = page("")
    for command in commands("\n".join(code_blocks(tour())))[1:]:
        assert command in home
    # Each command's --help, rendered from the typer app: every subcommand has its section.
    cli = page("reference/cli")
    for title in ("grade demo", "grade export coco", "grade evaluate slam", "grade benchmark run", "grade config validate"):
        assert f"\n{title}¶\n" in cli or f"\n{title}\n" in cli, title
    assert "Usage: grade replay [OPTIONS]" in cli
    # The help text is generated (docs/hooks/cli_reference.py), so its width is checked on the page.
    blocks = re.findall(r"<pre\b.*?</pre>", (site / "reference" / "cli" / "index.html").read_text(), re.DOTALL)
    help_lines = [line for block in blocks for line in html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines()]
    assert help_lines and max(map(len, help_lines)) <= CODE_COLUMNS
    # The config models and format modules, read from the code by mkdocstrings.
    assert "ExperimentConfig" in page("reference/config")
    assert "read_run_info" in page("reference/formats")


def code_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, line) of every line inside a fenced code block, at any indentation."""
    lines, fence = [], None
    for number, line in enumerate(markdown.splitlines(), 1):
        opening = FENCE.match(line)
        if fence is None:
            fence = opening[1] if opening else None
        elif opening and opening[1].startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
        else:
            lines.append((number, line))
    return lines


def test_code_blocks_fit_the_page_width():
    """No code block of the docs scrolls sideways (the generated command-line reference is checked on the built
    site, test_site_builds_strictly_with_the_generated_reference)."""
    wide = [f"{page.relative_to(ROOT)}:{number}: {len(line)} columns"
            for page in sorted(DOCS.rglob("*.md")) for number, line in code_lines(page.read_text())
            if len(line) > CODE_COLUMNS]
    assert not wide, wide


def test_readme_is_short_and_opens_with_the_two_commands():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= MAX_README_LINES
    assert lines[0].startswith("# GRADE"), "the title comes first"
    first_block_after_title = code_blocks("\n".join(lines[1:]))[0]
    assert commands(first_block_after_title) == TWO_COMMANDS
    assert text.index("```bash") < text.index("\n## "), "the two commands come before any section"
    # CI runs the README's test command.
    assert "make test" in commands((ROOT / ".ci" / "run").read_text())


def test_readme_links_stay_inside_the_checkout():
    links = re.findall(r"\]\(([^)]+)\)", README.read_text())
    assert links
    for link in links:
        assert "://" not in link, link
        target = ROOT / link.split("#", 1)[0]
        assert target.exists(), link


def test_the_benchmarks_page_lists_every_benchmark():
    listed = set(re.findall(r"^\| `(\w+\.py)` \|", (DOCS / "benchmarks.md").read_text(), re.MULTILINE))
    assert listed == {path.name for path in (ROOT / "benchmarks").glob("*.py")}


def test_every_path_and_module_the_docs_name_exists():
    """Files, folders, modules and functions named in the README and the docs exist, so moving code cannot leave
    the docs pointing at nothing. (`simulation.*` and `postprocess.*` are also config sections: those names are
    checked only when they start with one of the package's modules.)"""
    missing = []
    for page in (README, *sorted(DOCS.rglob("*.md"))):
        for name in re.findall(r"`([^`\s]+)`", page.read_text()):
            name = name.split("(")[0]
            if re.fullmatch(rf"({'|'.join(TOP_FOLDERS)})/[\w./-]*(\.\w+|/)", name):
                if not (ROOT / name).exists():
                    missing.append(f"{page.relative_to(ROOT)}: {name}")
            elif (re.fullmatch(rf"({'|'.join(PACKAGES)})(\.\w+)+", name) and name.rsplit(".", 1)[1] not in FILE_TYPES
                  and not resolves(name)):
                missing.append(f"{page.relative_to(ROOT)}: {name}")
    assert not missing, missing


def resolves(dotted: str) -> bool:
    """The longest importable module prefix of `dotted`, then attributes down to its end."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(parts[:split])
        try:
            if importlib.util.find_spec(module_name) is None:
                continue
        except ModuleNotFoundError:
            continue
        if split == 1 and parts[0] in CONFIG_SECTIONS:
            return True  # a config key such as simulation.duration
        target = importlib.import_module(module_name)
        for attribute in parts[split:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


@pytest.mark.slow
def test_the_tour_runs_as_written(tmp_path, asset_cache):
    runs = tmp_path / "runs"
    # The session's converted assets (the demo's environment settings): only the recording is new.
    overrides = [arg for setting in [*SHORT_DEMO, f"assets_dir={asset_cache}"] for arg in ("--set", setting)]
    demo = run_grade("demo", "--out", str(runs / "demo"), *overrides)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]

    lines = [line for block in code_blocks(tour()) for line in commands(block)]
    assert lines[0] == ACTIVATE and "runs/demo" in "\n".join(lines)
    # Every other line is a `grade` command, run as written (in the suite's CLI server: tests/cli_process.py).
    for line in lines[1:]:
        command = shlex.split(line.replace("runs/", f"{runs}/"))
        assert command[0] == "grade", line
        result = run_grade(*command[1:])
        assert result.returncode == 0, f"{line}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"

    run = runs / "demo"
    frames = [json.loads(line) for line in (run / "gt" / "camera" / "frames.jsonl").read_text().splitlines()]
    # view: three pictures a person can open
    for name in ("contact_sheet_camera.png", "trajectory.png", "imu.png"):
        with Image.open(run / "view" / name) as image:
            assert min(image.size) > 100
    # postprocess: noisy IMU and depth, blurred frames, beside the exact ones
    exact, noisy = np.load(run / "gt" / "imu.npz"), np.load(run / "gt" / "imu_noisy.npz")
    key = "imu_camera.linear_acceleration"
    assert exact[key].shape == noisy[key].shape and not np.array_equal(exact[key], noisy[key])
    for derived in ("rgb_blur", "depth_noisy"):
        assert len(list((run / "gt" / "camera" / derived).glob("*.png"))) == len(frames)
    # export: one COCO image per kept frame
    coco = json.loads((runs / "demo-coco" / "annotations" / "instances_all.json").read_text())
    dropped = json.loads((runs / "demo-coco" / "export.json").read_text())
    assert 0 < len(coco["images"]) <= len(frames) and coco["annotations"], dropped
    # replay: the same run again, byte for byte
    report = json.loads((runs / "demo-replay" / "replay.json").read_text())
    cameras = report["cameras"]
    assert cameras and all(c["identical_frames"] == c["frames"] == len(frames) for c in cameras.values()), report
    # evaluate: ORB-SLAM3's trajectory against the ground truth
    metrics = json.loads((runs / "demo-eval" / "metrics.json").read_text())
    assert metrics["pairs"] >= 3 and 0 <= metrics["ate"]["rmse"] < 0.5, metrics
