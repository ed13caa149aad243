"""Run a module on given CPU cores: `python -m pipeline.pinned 0,1 pipeline.cli generate ...`.

`grade batch` starts its pinned local jobs this way (executor.pin_cores). The affinity is set before the
job imports anything, so every thread it starts (BLAS, numba, Embree, the image writers) inherits it and
stays on the job's cores.
"""

from __future__ import annotations

import os
import runpy
import sys


def main() -> None:
    cores, module, *args = sys.argv[1:]
    os.sched_setaffinity(0, {int(core) for core in cores.split(",")})
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
