"""The profile report of ``benchmarks/bench_run_overhead.py --profile``: its sections, the
package grouping adding up to the profiled total, the ``-X importtime`` reading."""

from __future__ import annotations

import cProfile
import json
import pstats
import re
import subprocess
import sys
from pathlib import Path

import pytest

bench = pytest.importorskip("benchmarks.bench_run_overhead")
ROOT = Path(__file__).resolve().parent.parent


def _work() -> int:
    text = json.dumps({str(i): list(range(i % 7)) for i in range(3000)})
    return len(sorted(text))


def _profiled(tmp_path: Path) -> Path:
    profiler = cProfile.Profile()
    profiler.runcall(_work)
    path = tmp_path / "work.pstats"
    profiler.dump_stats(str(path))
    return path


def _meta() -> dict:
    times = {"wall_s": 2.5, "cpu_s": 2.25, "stderr": ""}
    return {"title": "synthetic", "command": "python -m ppknn run X", "load": "0.10",
            "plain": times, "importtime": times, "profiled": times, "bare_s": 0.03,
            "timings": {"protocol_s": 0.5, "measure_s": 0.25},
            "plain_timings": {"protocol_s": 0.25, "measure_s": 0.125},
            "imports": [(120.0, 3.5, "numpy"), (40.0, 40.0, "json")]}


def test_the_report_has_its_sections_and_the_groups_add_up(tmp_path):
    path = _profiled(tmp_path)
    text = bench.profile_report(path, _meta())
    for heading in ("== whole command", "== the run's phases", "== imports ==",
                    "== own time by package", "== top 25 by cumulative time",
                    "== top 25 by own time"):
        assert heading in text
    assert "outside the phases (interpreter, imports, CLI, exit): 2.12 s" in text  # 2.5-0.375
    assert re.search(r"^protocol +0\.250 +0\.500$", text, re.M)  # unprofiled, profiled
    assert re.search(r"^measure +0\.125 +0\.250$", text, re.M)
    assert "   120.0     3.5  numpy" in text
    stats = pstats.Stats(str(path))
    groups = bench.package_totals(stats)
    assert sum(groups.values()) == pytest.approx(stats.total_tt, abs=1e-9)
    # json's encoder is the standard library; sorted (a C function) is charged to its
    # caller, this file, which is neither the project nor a known package
    here = str(Path(__file__))
    mine = sum(v[2] for (f, _, _), v in stats.stats.items() if f == here)
    called = sum(edge[2] for (f, _, _), v in stats.stats.items() if f == "~"
                 for (caller, _, _), edge in v[4].items() if caller == here)
    assert called > 0 and groups["python stdlib"] > 0
    # at least that: other files no known package claims (some suites load one) count too
    assert groups["other"] >= mine + called - 1e-9
    lines = text.split("== own time by package")[1].split("\n\n")[0].splitlines()[1:]
    listed = [float(line.split()[0]) for line in lines[:-1]]
    assert sum(listed) == pytest.approx(stats.total_tt, abs=0.0005 * len(listed))
    assert lines[-1].startswith(f"{stats.total_tt:7.3f} s  total")
    top = text.split("== top 25 by own time (cProfile) ==\n")[1].splitlines()
    assert len(top) == 1 + min(25, len(stats.stats))
    owns = [float(line.split()[1]) for line in top[1:]]
    assert owns == sorted(owns, reverse=True)
    cum = text.split("== top 25 by cumulative time")[1].split("\n\n")[0].splitlines()[2:]
    assert cum[0].endswith("_work") and not any("runcall" in line for line in cum)


def test_the_way_in_is_left_out_of_the_cumulative_list():
    wrappers = [("<frozen runpy>", 201, "run_module"), ("~", 0, "<built-in method builtins.exec>"),
                ("/x/site-packages/typer/core.py", 303, "_main"),
                ("<frozen importlib._bootstrap>", 1165, "_find_and_load"),
                ("/usr/lib/python3.11/threading.py", 611, "wait"),
                ("/x/site-packages/numpy/__init__.py", 1, "<module>"),
                ("~", 0, "<method 'acquire' of '_thread.lock' objects>")]
    assert all(bench.is_wrapper(f) for f in wrappers)
    kept = [(str(bench.ROOT / "simulations" / "pipeline.py"), 65, "run_scenario"),
            ("/usr/lib/python3.11/threading.py", 1, "start"),
            ("/x/site-packages/matplotlib/figure.py", 3300, "savefig")]
    assert not any(bench.is_wrapper(f) for f in kept)


def test_importtime_keeps_the_top_level_imports_heaviest_first():
    log = "\n".join([
        "import time: self [us] | cumulative | imported package",
        "import time:       100 |        100 |   _io",
        "import time:      2000 |       2100 | encodings",
        "import time:       500 |        500 |     numpy.core",
        "import time:      1500 |      90000 | numpy",
        "some other line",
        "import time:      7000 |       7000 | json"])
    assert bench.import_time_top(log, n=2) == [(90.0, 1.5, "numpy"), (7.0, 7.0, "json")]
    assert [name for _, _, name in bench.import_time_top(log)] == ["numpy", "json", "encodings"]


def test_paths_and_packages_as_a_reader_knows_them():
    root = bench.ROOT
    assert bench.short_path(str(root / "core" / "leakage.py")) == "ppknn/core/leakage.py"
    assert bench.short_path(str(root / "ppknn" / "cli.py")) == "ppknn/cli.py"
    site = "/x/.venv/lib/python3.11/site-packages/scipy/spatial/distance.py"
    assert bench.short_path(site) == "scipy/spatial/distance.py"
    assert bench.short_path("/usr/lib/python3.11/json/encoder.py") == "stdlib/json/encoder.py"
    assert bench.package_of(str(root / "core" / "leakage.py")) == "ppknn.core"
    assert bench.package_of(str(root / "ppknn" / "cli.py")) == "ppknn (facade, cli)"
    assert bench.package_of(site) == "scipy"
    assert bench.package_of("<frozen importlib._bootstrap>") == "import machinery"
    assert bench.package_of("/x/site-packages/rich/console.py") == "cli (typer, rich)"


def test_without_old_or_profile_the_command_says_what_it_needs():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_run_overhead.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--old is required" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("argv, existing", [
    (["--old", "OLD", "--out", "{d}"], "runs.csv.gz"),
    (["--profile", "n64", "--profile-out", "{d}"], "profile-n64-plot.txt")])
def test_an_earlier_runs_files_are_never_replaced_without_overwrite(tmp_path, argv, existing):
    (tmp_path / existing).write_text("an earlier run's\n")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_run_overhead.py"),
                           *[a.format(d=tmp_path) for a in argv]],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert existing in done.stderr and "--overwrite" in done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / existing).read_text() == "an earlier run's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing]  # nothing else written


def test_the_samples_file_is_gzip_csv_with_the_same_bytes_for_the_same_rows(tmp_path):
    import csv
    import gzip

    rows = [{"case": "n64", "side": "new", "mode": "cold", "wall_s": 1.5, "overhead_s": 1.25}]
    sweeps = {"new": [{"measure_s": 0.0125}]}
    digests = []
    for name in ("a", "b"):
        out = tmp_path / name
        bench._write(rows, sweeps, out)
        digests.append((out / bench.RUNS).read_bytes())
        with gzip.open(out / bench.RUNS, "rt", newline="") as f:
            got = list(csv.DictReader(f))
        assert got[0]["wall_s"] == "1.5000" and got[1]["measure_s"] == "0.0125"
    assert digests[0] == digests[1]
