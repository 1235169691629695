"""``benchmarks/bench_ppknn_floor.py --parts``: every part timed, the parts within the run's
time, the floor's parts beside them; bad arguments refused with exit code 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

bench = pytest.importorskip("benchmarks.bench_ppknn_floor")
SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_ppknn_floor.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=300)


def test_parts_of_a_small_run_add_up_to_its_time():
    out = _run("--parts", "2", "--parties", "4", "--queries", "40")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    total = float(re.search(r"channels on: ([\d.]+) ms a run", lines[0]).group(1))
    values = {}
    for label, *_ in bench._PARTS:
        (line,) = [x for x in lines if x.startswith(label)]
        values[label] = float(line[len(label):].split()[0])
    rest = float(next(x for x in lines if x.startswith("driver and the rest")).split()[-1])
    assert all(v >= 0 for v in values.values()) and rest >= 0
    # every part was reached, and the parts and the rest make up the run's time
    assert values["PP-TopK steps"] > 0 and values["distances (a cdist call per owner)"] > 0
    assert sum(values.values()) + rest == pytest.approx(total, abs=0.05 * len(values))
    floors = [x for x in lines if x.startswith("floor: ")]
    assert len(floors) == 4 and all(float(x.split()[-1]) > 0 for x in floors)


@pytest.mark.parametrize("args, message", [
    (("--parts", "0"), "--parts must be at least 1, got 0"),
    ((), "give --old TREE"),
])
def test_bad_arguments_exit_2(args, message):
    out = _run(*args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
