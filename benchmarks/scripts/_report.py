"""What every benchmark script prints first, how it writes its JSON report, and where
a gap curve reaches a target (``reach``).

The scripts import it as a sibling module (``python benchmarks/scripts/x.py``
puts this folder on ``sys.path``).
"""

from __future__ import annotations

import json
import math
import os
import platform
import shlex
import sys
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTIONS = ("ssvm-core", "ssvm-oracles", "ssvm-data", "ssvm-paths", "numpy")


def machine_info() -> dict:
    """CPU model, usable cores, Python and package versions."""
    cpu_model = platform.processor() or platform.machine() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        nproc = len(os.sched_getaffinity(0))  # what `nproc` prints
    except AttributeError:
        nproc = os.cpu_count()
    versions = {}
    for dist in DISTRIBUTIONS:
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = None
    return {"nproc": nproc, "cpu_count": os.cpu_count(), "cpu_model": cpu_model,
            "python": platform.python_version(), "platform": platform.platform(),
            "versions": versions}


def print_header(script: str, argv: list[str] | None) -> tuple[str, dict]:
    """Print the command (``$ script args``) and the machine.

    ``argv`` is the script's argument list, ``None`` for ``sys.argv[1:]``.
    Returns the command and ``machine_info()``, for the report.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(shlex.quote(a) for a in [script, *args])
    machine = machine_info()
    print(f"$ {command}")
    print(f"machine: nproc={machine['nproc']} (cpu_count={machine['cpu_count']}), "
          f"CPU: {machine['cpu_model']}")
    print(f"python {machine['python']}, " + ", ".join(
        f"{k} {v}" for k, v in machine["versions"].items() if v is not None))
    return command, machine


def write_json(path: str | None, report: dict) -> None:
    """Write ``report`` to ``path`` (nothing when ``path`` is None) and say so."""
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        print(f"wrote {path}")


def reach(xs: list[float], gaps: list[float], target: float) -> float | None:
    """The x (passes or seconds) where ``gaps`` first reach ``target``, interpolated
    linearly in log(gap) between checks; None if never."""
    for p in range(1, len(gaps)):
        if gaps[p - 1] <= target:
            return float(xs[p - 1])
        if gaps[p] <= target:
            lo, hi = math.log(gaps[p - 1]), math.log(max(gaps[p], 1e-300))
            return xs[p - 1] + (lo - math.log(target)) / (lo - hi) * (xs[p] - xs[p - 1])
    return None
