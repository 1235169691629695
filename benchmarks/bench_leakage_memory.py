"""Peak memory of leakage scoring on big transcripts: ``python -m benchmarks.bench_leakage_memory``.

Two runs are made (in-process runtime, channels off, results in ``--output``):
a ring of ``--parties`` data owners (default 1,000) and a DP-TT server holding
``--points`` points (default 10^6) answering ``--queries`` client queries.
Then, for each results folder, a **fresh process** recomputes its leakage table
exactly as ``ppknn leakage DIR`` does and reports:

* the peak resident memory of the scoring process (``ru_maxrss``), and its
  resident memory right after importing every protocol, party and attack module
  (the baseline every process pays);
* the transcript's size: Parquet parts on disk and the decoded payload and
  provenance bytes the whole transcript would take in memory.

The scorers read the transcript one protocol round at a time, so the peak
above the baseline follows the largest round, not the transcript. Nothing
here is a timed assertion; it prints one table and writes ``memory.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

RING = """
[run]
name = "leak-ring-{n}"
seed = 1
output = "{out}"
[data]
dataset = "synthetic:classification?rows={rows}&features=4&classes=2"
test_fraction = {tf}
[parties]
n = {n}
[protocol]
name = "ppknn-ring"
k = 5
rounds = 2
[runtime]
kind = "inprocess"
channels = false
flush_every = 256
"""

DPTT = """
[run]
name = "leak-dptt-{points}"
seed = 1
output = "{out}"
[data]
dataset = "synthetic:classification?rows={rows}&features=2&classes=2"
test_fraction = {tf}
scale = "minmax"
bounds = {{ lower = [0.0, 0.0], upper = [1.0, 1.0] }}
[protocol]
name = "dptt"
variant = "GS"
utility = "cmp"
final_epsilon = 10.0
delta = 1e-7
[runtime]
kind = "inprocess"
channels = false
flush_every = 4
"""

SCORE = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    import pyarrow.parquet
    from ppknn.simulations import leakage, registry
    from ppknn.simulations.leakage import attacks, stream
    from ppknn.core.transcript import Transcript
    registry.names()  # every protocol, party and attack module imported before the baseline
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    folder = Path(sys.argv[1])
    t0 = time.perf_counter()
    rows = leakage.recompute(folder)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = Transcript(folder / "transcript")
    decoded = 0
    for table in t.iter_tables(["payload", "provenance"]):
        decoded += sum(len(v) for v in table["payload"].to_pylist())
        decoded += sum(len(v) for v in table["provenance"].to_pylist())
    disk = sum(p.stat().st_size for p in t.parts())
    print(json.dumps({"rows": len(rows), "baseline_kib": base, "peak_kib": peak,
                      "seconds": seconds, "parts": len(t.parts()), "disk_bytes": disk,
                      "decoded_bytes": decoded, "messages": len(t)}))
""")


def _run(scenario: str, folder: Path) -> float:
    folder.parent.mkdir(parents=True, exist_ok=True)
    toml = folder.parent / f"{folder.name}.toml"
    toml.write_text(scenario)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ppknn", "run", str(toml), "--overwrite"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _score(folder: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", SCORE, str(folder)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run both cases and print the table (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parties", type=int, default=1000)
    ap.add_argument("--ring-queries", type=int, default=100)
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--output", type=Path, default=Path("results/bench-leakage-memory"))
    ap.add_argument("--skip-runs", action="store_true",
                    help="Score the folders already in --output (no new runs).")
    args = ap.parse_args(argv)
    out = args.output
    rows_ring = args.parties * 20 + args.ring_queries
    cases = {
        "ring": (out / "ring", RING.format(n=args.parties, rows=rows_ring,
                                           tf=args.ring_queries / rows_ring,
                                           out=out / "ring")),
        "dptt": (out / "dptt", DPTT.format(points=args.points,
                                           rows=args.points + args.queries,
                                           tf=args.queries / (args.points + args.queries),
                                           out=out / "dptt")),
    }
    report = {}
    for name, (folder, scenario) in cases.items():
        run_s = None if args.skip_runs else _run(scenario, folder)
        measured = _score(folder)
        measured["run_seconds"] = run_s
        report[name] = measured
        print(f"{name}: {measured['messages']:,} messages in {measured['parts']} parts "
              f"({measured['disk_bytes'] / 2**20:.1f} MiB on disk, "
              f"{measured['decoded_bytes'] / 2**20:.1f} MiB decoded); scoring "
              f"{measured['rows']} rows took {measured['seconds']:.1f} s, peak RSS "
              f"{measured['peak_kib'] / 1024:.0f} MiB (after imports "
              f"{measured['baseline_kib'] / 1024:.0f} MiB)", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
