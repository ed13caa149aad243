"""Fill numba's on-disk cache ahead of the first real run: `make setup` runs `python -m pipeline.warmup`.

Numba compiles a kernel the first time a process calls it with new argument types and caches the machine code
beside the source (`__pycache__`), keyed by the source file; later processes load it in milliseconds. On a
fresh clone the first `grade demo` would pay for every compilation while it records. The surest way to compile
exactly the signatures the pipeline uses is to run it: the demo config shortened to half a second (the same
scene, camera and code paths, so the same argument types and array layouts: a smaller camera, say, renders in
one tile and passes contiguous arrays where the demo's tiles pass strided views, a signature of its own), then
the paper's postprocess preset (noise, blur, rolling shutter) on it, then the demo again with a camera smaller
than one render tile, and with render.quality default's lighting, in a temporary folder deleted afterwards.
Every cached kernel the demo and its postprocess call is compiled here (about a minute on two idle cores).

    .venv/bin/python -m pipeline.warmup
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Durations only: anything else may change which signatures the kernels are compiled for.
SHORT = ["simulation.duration=0.25", "simulation.bootstrap=0.25"]
SMALL_CAMERA = ["robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48"]


def _grade(*args: str) -> None:
    """One `grade` command in a process of its own, as the first real run would be; its output only on failure."""
    env = {**os.environ, "GRADE_QUIET": "1"}
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], env=env, capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        sys.exit(f"warm-up failed: grade {' '.join(args)}\n{result.stdout}{result.stderr}")


def main() -> None:
    from pipeline.run_cli import demo_config

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grade-warmup-") as folder:
        run = Path(folder) / "run"
        _grade("generate", str(demo_config()), "--out", str(run), *[a for s in SHORT for a in ("--set", s)])
        _grade("postprocess", str(run), "--preset", "grade-paper")
        # A camera smaller than one render tile passes the kernels contiguous arrays: signatures of their own.
        small = [a for s in [*SHORT, *SMALL_CAMERA] for a in ("--set", s)]
        _grade("generate", str(demo_config()), "--out", str(Path(folder) / "small"), *small)
        # The lighting of render.quality default and high (irradiance probes, GGX, soft shadows): kernels of their own.
        _grade("generate", str(demo_config()), "--out", str(Path(folder) / "lit"), *small, "--set",
               "render.quality=default")
    print(f"numba's cache is warm ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
