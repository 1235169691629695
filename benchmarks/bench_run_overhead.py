"""What `ppknn run` costs beyond start-up + protocol: this checkout beside another tree, A/B.

Run:  git worktree add --detach /tmp/ppknn-base <commit>
      python benchmarks/bench_run_overhead.py --old /tmp/ppknn-base [--rounds 4]
          [--out docs/benchmarks/run-overhead] [--sweep-runs 100] [--hosted]
      python benchmarks/bench_run_overhead.py --profile CASE [--profile-out DIR]

``--profile CASE``: where one cold ``ppknn run`` of CASE spends its time, without and
with ``--plot``. Each is run four times, each in a fresh interpreter, after the project's
missing bytecode is compiled (as a first import does): a warm-up, ``-X importtime``,
under ``cProfile`` in every thread (``profile-CASE[-plot].pstats``, binary, git ignores
it) and plain.
``profile-CASE[-plot].txt`` reads them: wall and CPU time, the run's phases
(``summary.json``), the heaviest top-level imports, own time by package and the top
25 functions by cumulative and by own time.

Each sample runs in a fresh interpreter (``--child``), alternating this checkout
(``new``) and the ``--old`` tree (imported in place of the installed package), on
the same machine in the same run:

* ``cold``: the whole command ``ppknn run SCENARIO --output TMP`` timed from outside
  (process start to exit, imports included); ``overhead`` is that wall time minus the
  run's own ``startup_s + protocol_s`` (``summary.json``). ``old`` always renders its
  plots; ``new`` renders none (``--no-plot``) or both (``new+plot``, ``--plot``: the default).
* ``warm``: a second run in the same process (imports done, caches warm) through the
  scenario pipeline into a results folder, wall time of that call alone.
* the phases of each run (``timings_s``) and the digests of the written
  ``predictions.csv``, ``parties.csv``, ``disclosure.csv`` and ``leakage.csv``
  (both sides must agree).
* ``sweep``: ``--sweep-runs`` runs of the quickstart (in-process, one seed each: every
  run its own split, so no cache helps) through the pipeline as a sweep runs them
  (nothing written); per run, its measuring cost ``measure_s`` (+ ``leakage_s``, none
  in a sweep), beside a single ``ppknn run``'s ``measure_s + leakage_s``.

Cases: the embedded quickstart in-process (4 owners, 190 queries) and PP-kNN at
n = 64 on abalone with 1,000 queries in-process (``--hosted``: also on a local Ray
instance, hosted layout). Writes ``runs.csv.gz``, ``README.md``-ready lines (stdout) and
``overhead.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N64 = """[run]
name = "n64"
seed = 0

[data]
dataset = "abalone"
test_fraction = 0.25
max_queries = 1000

[parties]
n = 64

[protocol]
name = "ppknn-ring"
k = 5

[runtime]
kind = "{kind}"
channels = true
{layout}
"""
CASES = {"quickstart": None, "n64": "inprocess", "n64-hosted": "ray"}
DIGESTED = ("predictions.csv", "parties.csv", "disclosure.csv", "leakage.csv")


def _use_tree(tree: str) -> None:
    """Import ``ppknn`` from ``tree`` (an editable install maps the package to folders)."""
    import __editable___ppknn_0_1_0_finder as finder  # the installed package's finder

    for name, path in list(finder.MAPPING.items()):
        finder.MAPPING[name] = path.replace(str(ROOT), tree)
    sys.path.insert(0, tree)


def _scenario_file(case: str, folder: Path) -> Path | None:
    kind = CASES[case]
    if kind is None:
        return None
    path = folder / f"{case}.toml"
    layout = 'layout = "hosted"' if kind == "ray" else ""
    path.write_text(N64.format(kind=kind, layout=layout))
    return path


def _run_args(case: str, folder: Path, out: Path) -> list[str]:
    path = _scenario_file(case, folder)
    args = ["run"] + ([str(path)] if path else ["--runtime", "inprocess"])
    return args + ["--output", str(out), "--overwrite"]


def child_cli(args: list[str]) -> None:
    """``ppknn run`` in this interpreter (the tree already chosen)."""
    try:
        from ppknn.cli import main
    except ModuleNotFoundError:  # a tree from before the CLI moved to ppknn/cli.py
        from ppknn.simulations.cli import main

    sys.argv = ["ppknn", *args]
    main()


def child_warm(args: list[str], side: str) -> dict:
    """Two runs through the pipeline into a folder; the second one's wall time and phases."""
    import warnings

    warnings.simplefilter("ignore")
    from ppknn.api import load_scenario

    if side == "old":  # the tree at a12dde6 kept it in results.py
        from ppknn.simulations.results import run_scenario
    else:
        from ppknn.simulations.pipeline import run_scenario
    path = args[1] if args[1] != "--runtime" else None
    sc = load_scenario(path) if path else load_scenario(
        str(ROOT / "simulations" / "quickstart.toml"), overrides={"runtime.kind": "inprocess"})
    walls, timings = [], {}
    for _ in range(2):
        stage = Path(tempfile.mkdtemp(prefix="warm-"))
        t0 = time.perf_counter()
        whole = run_scenario(sc, stage=stage)
        walls.append(time.perf_counter() - t0)
        timings = json.loads((stage / "summary.json").read_text())["timings_s"]
        del whole
    return {"wall": walls[1], "timings": timings}


def child_sweep(runs: int, side: str) -> dict:
    """``runs`` quickstart runs (one seed each) as a sweep runs them; per-run phases."""
    import warnings

    warnings.simplefilter("ignore")
    from ppknn.api import load_scenario

    if side == "old":  # the tree at a12dde6 kept it in results.py
        from ppknn.simulations.results import run_scenario
    else:
        from ppknn.simulations.pipeline import run_scenario
    base = str(ROOT / "simulations" / "quickstart.toml")
    out = []
    for seed in range(runs):
        sc = load_scenario(base, overrides={"runtime.kind": "inprocess", "run.seed": seed})
        out.append(dict(run_scenario(sc).run.timings))
    return {"timings": out}


def _digests(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()[:16]
            for name in DIGESTED if (folder / name).is_file()}


def _child(side: str, old: str, mode: str, args: list[str]) -> tuple[float, str]:
    cmd = [sys.executable, __file__, "--child", side, "--old", old, "--mode", mode, "--",
           *args]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=os.getcwd(),
                          env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{side} {mode} {args} failed:\n{done.stdout[-3000:]}\n"
                         f"{done.stderr[-3000:]}")
    return wall, done.stdout


def _cold(side: str, label: str, old: str, case: str, tmp: Path) -> dict:
    out = tmp / f"{case}-{label}"
    args = _run_args(case, tmp, out)
    if label == "new":
        args.append("--no-plot")
    elif label == "new+plot":
        args.append("--plot")
    wall, _ = _child(side, old, "cli", args)
    t = json.loads((out / "summary.json").read_text())["timings_s"]
    return {"case": case, "side": label, "mode": "cold", "wall_s": wall,
            "overhead_s": wall - t["startup_s"] - t["protocol_s"], **t,
            "digests": _digests(out)}


def _warm(side: str, old: str, case: str, tmp: Path) -> dict:
    _, stdout = _child(side, old, "warm", _run_args(case, tmp, tmp / "unused"))
    row = json.loads(stdout.strip().splitlines()[-1])
    t = row["timings"]
    return {"case": case, "side": side, "mode": "warm", "wall_s": row["wall"],
            "overhead_s": row["wall"] - t["startup_s"] - t["protocol_s"], **t}


def _median(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else float("nan")


def _range(rows: list[dict], key: str) -> str:
    values = sorted(r[key] for r in rows if r.get(key) is not None)
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({values[0]:.2f}-{values[-1]:.2f})"


def _report(rows: list[dict], sweeps: dict[str, list[dict]], out: Path) -> None:
    keys = sorted({(r["case"], r["side"], r["mode"]) for r in rows})
    print("| case | side | mode | n | wall s | overhead s | protocol s | measure s | "
          "leakage s | plots s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for case, side, mode in keys:
        sel = [r for r in rows if (r["case"], r["side"], r["mode"]) == (case, side, mode)]
        print(f"| {case} | {side} | {mode} | {len(sel)} | {_range(sel, 'wall_s')} | "
              f"{_range(sel, 'overhead_s')} | {_range(sel, 'protocol_s')} | "
              f"{_range(sel, 'measure_s')} | {_range(sel, 'leakage_s')} | "
              f"{_range(sel, 'plots_s')} |")
    for case in sorted({r["case"] for r in rows}):
        cold = {s: [r for r in rows if r["case"] == case and r["side"] == s
                    and r["mode"] == "cold"] for s in ("old", "new", "new+plot")}
        for label in ("new", "new+plot"):  # median over median; then round by round
            if not (cold["old"] and cold[label]):
                continue
            ratio = _median(cold[label], "overhead_s") / _median(cold["old"], "overhead_s")
            paired = sorted(a["overhead_s"] / b["overhead_s"] for a in cold[label]
                            for b in cold["old"] if a.get("round") == b.get("round"))
            rounds = (f" (each round's {paired[0]:.3f}-{paired[-1]:.3f}, {len(paired)} rounds)"
                      if paired else "")
            print(f"{case}: cold overhead {label} / old = {ratio:.3f}{rounds}")
        for r in cold["new"]:
            r["measure_leakage_s"] = r["measure_s"] + r.get("leakage_s", 0.0)
        if cold["new"]:
            print(f"{case}: new (measure + leakage) {_median(cold['new'], 'measure_leakage_s'):.3f}"
                  f" s vs protocol {_median(cold['new'], 'protocol_s'):.3f} s")
        for name in DIGESTED:
            seen = {r["digests"].get(name) for s in cold.values() for r in s}
            print(f"{case}: {name} identical on every side: {len(seen) == 1}")
    for side, runs in sweeps.items():
        per = [t["measure_s"] + t.get("leakage_s", 0.0) for t in runs]
        print(f"sweep {side}: {len(per)} runs, measuring per run median "
              f"{statistics.median(per):.4f} s (mean {statistics.fmean(per):.4f}, max "
              f"{max(per):.4f}); first run {per[0]:.4f} s")
    _write(rows, sweeps, out)


def _write(rows: list[dict], sweeps: dict[str, list[dict]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    columns = ["case", "side", "mode", "wall_s", "overhead_s", "prepare_s", "startup_s",
               "protocol_s", "recorded_s", "measure_s", "leakage_s", "write_s", "plots_s"]
    # gzip (mtime 0: the same rows give the same bytes) keeps the committed copy small
    with gzip.GzipFile(out / RUNS, "wb", mtime=0) as raw, \
            io.TextIOWrapper(raw, newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{r[k]:.4f}" if isinstance(r.get(k), float) else r.get(k, ""))
                        for k in columns})
        for side, runs in sweeps.items():
            for t in runs:
                w.writerow({"case": "sweep-run", "side": side, "mode": "sweep",
                            **{k: f"{t[k]:.4f}" for k in columns if k in t}})
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppknn.simulations.reporting.plots import save_png

    cases = sorted({r["case"] for r in rows})
    sides = ["old", "new", "new+plot"]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.27
    for i, side in enumerate(sides):
        vals = [_median([r for r in rows if r["case"] == c and r["side"] == side
                         and r["mode"] == "cold"], "overhead_s") for c in cases]
        ax.bar([x + (i - 1) * width for x in range(len(cases))], vals, width, label=side)
    ax.set_xticks(range(len(cases)), cases)
    ax.set_ylabel("wall s beyond start-up + protocol")
    ax.set_title("ppknn run, cold (median)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, out / "overhead.png", dpi=80)
    plt.close(fig)


# --- where a cold ``ppknn run`` spends its time (``--profile CASE``) ---------------------

PHASES = ("prepare_s", "startup_s", "protocol_s", "recorded_s", "measure_s", "leakage_s",
          "write_s", "plots_s")
GROUPS = {"numpy": "numpy", "scipy": "scipy", "matplotlib": "matplotlib", "PIL": "matplotlib",
          "ray": "ray", "sklearn": "scikit-learn", "pandas": "pandas", "pyarrow": "pyarrow",
          "pydantic": "pydantic", "pydantic_core": "pydantic", "typer": "cli (typer, rich)",
          "rich": "cli (typer, rich)", "click": "cli (typer, rich)"}
WAITING = "waiting (lock, queue, sleep)"
WAITS = ("acquire' of '_thread.", "'get' of '_queue.", "time.sleep")
"""C functions a thread waits in; their time counts in :data:`WAITING`."""
PROFILE_ALL_THREADS = """
import cProfile, pstats, runpy, sys, threading
out, sys.argv = sys.argv[1], ["ppknn", *sys.argv[2:]]
workers = []


def _start(frame, event, arg):  # the first event of a new thread: profile it from here
    sys.setprofile(None)
    workers.append(cProfile.Profile())
    workers[-1].enable()


class _Snapshot:  # a running thread's profile as it stands (pstats would disable it)
    def __init__(self, p):
        p.snapshot_stats()
        self.stats = p.stats

    def create_stats(self):
        pass


threading.setprofile(_start)
main = cProfile.Profile()
try:
    main.runcall(runpy.run_module, "ppknn", run_name="__main__", alter_sys=True)
finally:
    threading.setprofile(None)
    merged = pstats.Stats(main)
    for p in workers:
        merged.add(_Snapshot(p))
    merged.dump_stats(out)
"""
"""``python -c`` this, OUT, ``ppknn`` arguments: ``cProfile -m ppknn`` but every thread
profiled (the in-process runtime runs the parties on a worker thread), merged into OUT."""


def short_path(filename: str) -> str:
    """A profiled file as a reader knows it: ``ppknn/core/x.py``, ``numpy/...``, ``stdlib/...``."""
    if filename == "~" or filename.startswith("<"):
        return filename
    path = filename.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    root = str(ROOT).replace("\\", "/") + "/"
    if path.startswith(root):
        top, _, rest = path[len(root):].partition("/")
        if top in ("core", "protocols", "parties", "simulations"):
            return f"ppknn/{top}/{rest}"
        return f"ppknn_reproductions/{rest}" if top == "reproductions" else f"{top}/{rest}"
    head, sep, tail = path.partition("/lib/python3.")
    return "stdlib/" + tail.split("/", 1)[1] if sep and "/" in tail else path


def package_of(filename: str) -> str:
    """The group a file's functions count their own time in (its short path's first part)."""
    if filename == "~":
        return "C functions called from C"
    if filename.startswith(("<frozen importlib", "<frozen zipimport")):
        return "import machinery"
    parts = short_path(filename).split("/")
    if parts[0] == "ppknn":
        return "ppknn." + parts[1] if len(parts) > 2 else "ppknn (facade, cli)"
    if parts[0] == "stdlib" or filename.startswith("<"):
        return "python stdlib"
    return GROUPS.get(parts[0], "other")


def _label(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    text = f"{short_path(filename)}:{line} {name}"
    return text if len(text) <= 46 else "..." + text[-43:]


def is_wrapper(func: tuple[str, int, str]) -> bool:
    """A frame every run passes through on its way in (runpy, the typer/click command
    chain, the import machinery, a module's body, ``exec``/``__import__``, a thread's
    wait, :data:`WAITS`); the report's imports section has what importing took."""
    filename, _, name = func
    return (filename.startswith(("<frozen runpy", "<string>"))
            or package_of(filename) in ("import machinery", "cli (typer, rich)")
            or short_path(filename) == "stdlib/threading.py" and name == "wait"
            or filename == "~" and any(w in name for w in WAITS)
            or name in ("<built-in method builtins.exec>", "<built-in method builtins.__import__>",
                        "<module>"))


def _top(stats, key: int, n: int) -> list[str]:
    """The ``n`` functions first by ``key`` (2 own; 3 cumulative, wrappers left out) as
    aligned lines."""
    rows = sorted(((f, v) for f, v in stats.stats.items() if key == 2 or not is_wrapper(f)),
                  key=lambda kv: kv[1][key], reverse=True)[:n]
    lines = [f"{'cum s':>6} {'own s':>6} {'calls':>7}  function"]
    for func, (_, calls, own, cum, _) in rows:
        lines.append(f"{cum:6.3f} {own:6.3f} {calls:7d}  {_label(func)}")
    return lines


def package_totals(stats) -> dict[str, float]:
    """Own time summed by the package of each function's file; a C function (no file) is
    charged to its callers' packages, each the share it called, except waiting on a lock
    (:data:`WAITING`: another thread's work is counted there too). Adds up to the total."""
    totals: dict[str, float] = {}

    def add(group: str, seconds: float) -> None:
        totals[group] = totals.get(group, 0.0) + seconds

    for (filename, _, name), (_, _, own, _, callers) in stats.stats.items():
        if filename != "~":
            add(package_of(filename), own)
            continue
        for (caller_file, _, _), edge in callers.items():
            add(WAITING if any(w in name for w in WAITS) else package_of(caller_file),
                edge[2])
        add("C functions called from C", own - sum(edge[2] for edge in callers.values()))
    return dict(sorted(totals.items(), key=lambda kv: kv[1], reverse=True))


def import_time_top(stderr: str, n: int = 15) -> list[tuple[float, float, str]]:
    """The ``n`` heaviest top-level imports of a ``-X importtime`` log: (cumulative ms, own
    ms, module), heaviest first. Nested imports (indented names) count in their parent's."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, cum, name = line[len("import time:"):].split("|", 2)
        if not own.strip().isdigit() or name.startswith("  "):
            continue  # the header, or an import made while another was loading
        rows.append((int(cum) / 1000, int(own) / 1000, name.strip()))
    return sorted(rows, reverse=True)[:n]


def _phase_lines(profiled: dict, plain: dict) -> list[str]:
    lines = [f"{'phase':<11} {'unprofiled s':>12} {'profiled s':>11}"]
    for key in PHASES:
        if key in profiled or key in plain:
            a, b = plain.get(key), profiled.get(key)
            lines.append(f"{key[:-2]:<11} {a if a is not None else float('nan'):12.3f} "
                         f"{b if b is not None else float('nan'):11.3f}")
    lines.append(f"{'sum':<11} {sum(plain.get(k, 0) for k in PHASES):12.3f} "
                 f"{sum(profiled.get(k, 0) for k in PHASES):11.3f}")
    return lines


def profile_report(stats_path: Path, meta: dict) -> str:
    """The text report of one profiled run (every thread's profile merged): whole-command
    times, the run's phases, imports, own time by package and the top functions. ``meta``:
    ``title``, ``command``, ``load``, ``plain`` / ``importtime`` / ``profiled``
    (``wall_s``, ``cpu_s``; ``plain`` also ``range``), ``bare_s``, ``timings`` /
    ``plain_timings`` (``timings_s``), ``imports`` (:func:`import_time_top`)."""
    import pstats

    stats = pstats.Stats(str(stats_path))
    total = stats.total_tt
    groups = package_totals(stats)
    find = [v[3] for (f, _, name), v in stats.stats.items()
            if f.startswith("<frozen importlib._bootstrap>") and name == "_find_and_load"]
    plain, prof = meta["plain"], meta["profiled"]
    phases_sum = sum(meta["plain_timings"].get(k, 0) for k in PHASES)
    out = [meta["title"], f"command: {meta['command']}", f"load average: {meta['load']}",
           f"bytecode: {meta.get('bytecode', '-')}", "",
           "== whole command (fresh interpreter, timed from outside) ==",
           f"unprofiled             wall {plain['wall_s']:6.2f} s  CPU {plain['cpu_s']:6.2f} s"
           + (" (median of 3: {:.2f}-{:.2f} s)".format(
               *plain["range"]) if "range" in plain else ""),
           f"-X importtime          wall {meta['importtime']['wall_s']:6.2f} s  "
           f"CPU {meta['importtime']['cpu_s']:6.2f} s",
           f"cProfile (all threads) wall {prof['wall_s']:6.2f} s  CPU {prof['cpu_s']:6.2f} s  "
           f"(threads add up to {total:.2f} s)",
           f"python -c pass         wall {meta['bare_s']:6.2f} s (median of 3)", "",
           "== the run's phases (summary.json timings_s) ==", *_phase_lines(
               meta["timings"], meta["plain_timings"]),
           f"unprofiled wall outside the phases (interpreter, imports, CLI, exit): "
           f"{plain['wall_s'] - phases_sum:.2f} s", "",
           "== imports ==",
           f"cumulative under importlib's _find_and_load (cProfile): "
           f"{max(find, default=0.0):.2f} s (profiled wall {prof['wall_s']:.2f} s)",
           "heaviest top-level imports (-X importtime, nested ones in their parent's):",
           f"{'cum ms':>8} {'own ms':>7}  module",
           *(f"{cum:8.1f} {own:7.1f}  {name}" for cum, own, name in meta["imports"]), "",
           "== own time by package (cProfile; C functions in their caller's) ==",
           *(f"{sec:7.3f} s {100 * sec / total if total else 0:5.1f} %  {name}"
             for name, sec in groups.items() if sec >= 0.0005),
           f"{sum(groups.values()):7.3f} s  total (profiled {total:.3f} s)", "",
           "== top 25 by cumulative time (cProfile; the way in and waits left out) ==",
           *_top(stats, 3, 25), "",
           "== top 25 by own time (cProfile) ==", *_top(stats, 2, 25)]
    return "\n".join(out) + "\n"


def _timed(cmd: list[str], cwd: Path) -> dict:
    """Run ``cmd`` to its end: wall and CPU (user + system of the child) seconds, stderr."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stderr": done.stderr}


def profile_case(case: str, out_dir: Path, plot: bool) -> Path:
    """One cold ``ppknn run`` of ``case`` three ways (``-X importtime``, under cProfile,
    plain), each a fresh interpreter; the ``.pstats`` and ``profile-CASE[-plot].txt``
    go to ``out_dir``."""
    name = f"profile-{case}{'-plot' if plot else ''}"
    out_dir.mkdir(parents=True, exist_ok=True)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.__main__ import _bytecode

    code = _bytecode(True, lambda line: None)  # as an installed package has it (git ignores)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        args = _run_args(case, tmp, tmp / "out") + ["--plot" if plot else "--no-plot"]
        py = [sys.executable]
        _timed(py + ["-m", "ppknn", *args], tmp)  # warm-up: the same files in the page cache
        imp = _timed(py + ["-X", "importtime", "-m", "ppknn", *args], tmp)
        prof = _timed(py + ["-c", PROFILE_ALL_THREADS, str(out_dir / f"{name}.pstats"),
                            *args], tmp)
        timings = json.loads((tmp / "out" / "summary.json").read_text())["timings_s"]
        plains = []
        for _ in range(3):
            plains.append(_timed(py + ["-m", "ppknn", *args], tmp))
            plains[-1]["timings"] = json.loads((tmp / "out" / "summary.json").read_text())[
                "timings_s"]
        plains.sort(key=lambda r: r["wall_s"])
        plain, plain_timings = plains[1], plains[1]["timings"]
        plain["range"] = (plains[0]["wall_s"], plains[2]["wall_s"])
        bare = statistics.median(_timed(py + ["-c", "pass"], tmp)["wall_s"] for _ in range(3))
    scenario = "embedded quickstart" if CASES[case] is None else "N64 of this script"
    meta = {"title": f"ppknn run, cold, {case} ({'--plot' if plot else '--no-plot'}): "
                     "where the time goes",
            "command": "python -m ppknn " + " ".join(
                a if not a.startswith(str(tmp)) else "TMP" + a[len(str(tmp)):] for a in args)
            + f"  ({scenario})",
            "load": f"{load} (start) -> "
                    + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (end)",
            "plain": plain, "importtime": imp, "profiled": prof, "bare_s": bare,
            "timings": timings, "plain_timings": plain_timings,
            "bytecode": f"cached ({code['compiled_now']} of {code['modules']} project modules "
                        "compiled first); one unmeasured warm-up run",
            "imports": import_time_top(imp["stderr"])}
    path = out_dir / f"{name}.txt"
    path.write_text(profile_report(out_dir / f"{name}.pstats", meta))
    return path


RUNS = "runs.csv.gz"
"""Every sample of the A/B (gzip-compressed CSV: ``zcat runs.csv.gz``)."""


def _refuse_existing(paths: list[Path], overwrite: bool) -> None:
    """Exit 2 naming the files a run would replace, unless ``--overwrite`` was given."""
    there = [str(p) for p in paths if p.exists()]
    if there and not overwrite:
        print(f"error: {', '.join(there)} already exist(s); give --overwrite to replace "
              "them, or --out / --profile-out to write elsewhere", file=sys.stderr)
        raise SystemExit(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="the other tree (e.g. a git worktree); required but with "
                    "--profile")
    ap.add_argument("--rounds", type=int, default=4, help="old/new pairs, order alternated")
    ap.add_argument("--sweep-runs", type=int, default=100)
    ap.add_argument("--hosted", action="store_true", help="also n = 64 on local Ray (hosted)")
    ap.add_argument("--cases", nargs="+", choices=list(CASES), help="only these cases")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "run-overhead")
    ap.add_argument("--profile", choices=list(CASES), metavar="CASE",
                    help="profile one cold run of CASE (without and with --plot) instead")
    ap.add_argument("--profile-out", type=Path, default=ROOT / "docs" / "benchmarks" /
                    "run-overhead", help="where --profile writes profile-CASE*.txt/.pstats")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace the files of an earlier run in --out / --profile-out")
    ap.add_argument("--child", choices=["old", "new"], help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=["cli", "warm", "sweep"], help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.child == "old":
            _use_tree(args.old)
        else:
            sys.path.insert(0, str(ROOT))
        if args.mode == "cli":
            child_cli(args.rest)
        elif args.mode == "warm":
            print(json.dumps(child_warm(args.rest, args.child)))
        else:
            print(json.dumps(child_sweep(int(args.rest[0]), args.child)))
        return
    if args.profile:
        _refuse_existing([args.profile_out / f"profile-{args.profile}{tail}"
                          for tail in (".txt", ".pstats", "-plot.txt", "-plot.pstats")],
                         args.overwrite)
        for plot in (False, True):
            print(f"wrote {profile_case(args.profile, args.profile_out, plot)}", flush=True)
        return
    if not args.old:
        ap.error("--old is required (the tree to compare against), unless --profile")
    _refuse_existing([args.out / RUNS, args.out / "overhead.png"], args.overwrite)
    cases = args.cases or ["quickstart", "n64"] + (["n64-hosted"] if args.hosted else [])
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for i in range(args.rounds):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            for case in cases:
                for side in order:
                    labels = ["old"] if side == "old" else ["new", "new+plot"]
                    for label in labels:
                        rows.append(_cold(side, label, args.old, case, tmp) | {"round": i})
                        print(f"round {i} {case} {label} cold: wall "
                              f"{rows[-1]['wall_s']:.2f} s, overhead "
                              f"{rows[-1]['overhead_s']:.2f} s", flush=True)
                    if case != "n64-hosted":
                        rows.append(_warm(side, args.old, case, tmp))
                        print(f"round {i} {case} {side} warm: wall {rows[-1]['wall_s']:.2f} s",
                              flush=True)
        sweeps = {}
        if args.sweep_runs:
            for side in ("old", "new"):
                _, stdout = _child(side, args.old, "sweep", [str(args.sweep_runs)])
                sweeps[side] = json.loads(stdout.strip().splitlines()[-1])["timings"]
    _report(rows, sweeps, args.out)


if __name__ == "__main__":
    main()
