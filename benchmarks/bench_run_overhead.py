"""What `ppknn run` costs beyond start-up + protocol: this checkout beside another tree, A/B.

Run:  git worktree add --detach /tmp/ppknn-base <commit>
      python benchmarks/bench_run_overhead.py --old /tmp/ppknn-base [--rounds 4]
          [--out docs/benchmarks/run-overhead] [--sweep-runs 100] [--hosted]

Each sample runs in a fresh interpreter (``--child``), alternating this checkout
(``new``) and the ``--old`` tree (imported in place of the installed package), on
the same machine in the same run:

* ``cold``: the whole command ``ppknn run SCENARIO --output TMP`` timed from outside
  (process start to exit, imports included); ``overhead`` is that wall time minus the
  run's own ``startup_s + protocol_s`` (``summary.json``). ``old`` always renders its
  plots; ``new`` renders none off a terminal (``new``) or with ``--plot`` (``new+plot``).
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
instance, hosted layout). Writes ``runs.csv``, ``README.md``-ready lines (stdout) and
``overhead.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
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
        if cold["old"] and cold["new"]:
            ratio = _median(cold["new"], "overhead_s") / _median(cold["old"], "overhead_s")
            print(f"{case}: cold overhead new / old = {ratio:.3f}")
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
    with open(out / "runs.csv", "w", newline="") as f:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the other tree (e.g. a git worktree)")
    ap.add_argument("--rounds", type=int, default=4, help="old/new pairs, order alternated")
    ap.add_argument("--sweep-runs", type=int, default=100)
    ap.add_argument("--hosted", action="store_true", help="also n = 64 on local Ray (hosted)")
    ap.add_argument("--cases", nargs="+", choices=list(CASES), help="only these cases")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "run-overhead")
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
                        rows.append(_cold(side, label, args.old, case, tmp))
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
