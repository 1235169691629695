"""Peak memory of leakage scoring on big transcripts: ``python -m benchmarks.bench_leakage_memory``.

Two runs are made (in-process runtime, channels off, results in ``--output``):
a ring of ``--parties`` data owners (default 1,000) and a DP-TT server holding
``--points`` points (default 10^6) answering ``--queries`` client queries.
Then, for each results folder, a **fresh process** recomputes its leakage table
exactly as ``ppknn leakage DIR`` does and reports:

* the peak resident memory of the scoring process (``ru_maxrss``), and its
  resident memory right after importing every protocol, party and attack module
  and reading one row group's ``round`` column (the baseline every process pays:
  the Parquet reader's code is paged in on first use, about 10 MiB);
* the transcript's size: Parquet parts on disk, the decoded payload and
  provenance bytes the whole transcript would take in memory, the largest
  round, the largest message and the largest row group (uncompressed).

The scorers read the transcript in record batches of at most
``simulations.leakage.stream.BYTE_BUDGET`` bytes (one row when a message is
larger), and the ring's attacks keep at most ``STATE_BUDGET`` of vectors at a
time (groups of nodes, each given its messages through a temporary file after
one read of the transcript), so the peak above the baseline follows
neither the transcript nor a round. What it still follows is the largest row
group: the recorder writes one
row group per flushed part and dictionary-encodes the payload column, so a
reader must decode the whole group's dictionary page to return any of its rows
(``--ring-flush-every`` and ``--dptt-flush-every`` set the runs' part sizes
to show it). Arrow's
default allocator (mimalloc) keeps freed pages resident; set
``ARROW_DEFAULT_MEMORY_POOL=system`` to see the peak without that retention.
``--pythonpath DIR`` scores with the ``ppknn`` package found in ``DIR`` instead
(e.g. an older checkout laid out as ``DIR/ppknn/{core,...}``), for a before/after
comparison on the same folders. Nothing here is a timed assertion; it prints
one table and writes ``memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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
flush_every = {flush}
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
flush_every = {flush}
"""

SCORE = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    import pyarrow.parquet
    from ppknn.simulations import leakage, registry
    from ppknn.simulations.leakage import attacks, stream
    from ppknn.core.transcript import Transcript
    registry.names()  # every protocol, party and attack module imported before the baseline
    folder = Path(sys.argv[1])
    first = sorted((folder / "transcript").glob("part-*.parquet"))[:1]
    for part in first:  # page the Parquet reader's code in before the baseline
        pyarrow.parquet.ParquetFile(part).read_row_group(0, columns=["round"])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    rows = leakage.recompute(folder)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = Transcript(folder / "transcript")
    decoded = largest = 0
    rounds = {}
    group = 0
    for part in t.parts():
        f = pyarrow.parquet.ParquetFile(part)
        for g in range(f.num_row_groups):
            meta = f.metadata.row_group(g)
            group = max(group, sum(meta.column(c).total_uncompressed_size
                                   for c in range(meta.num_columns)))
            table = f.read_row_group(g, columns=["protocol", "round", "payload", "provenance"])
            sizes = [len(a) + len(b) for a, b in zip(table["payload"].to_pylist(),
                                                     table["provenance"].to_pylist())]
            decoded += sum(sizes)
            largest = max([largest, *sizes])
            for p, r, n in zip(table["protocol"].to_pylist(), table["round"].to_pylist(), sizes):
                rounds[(p, r)] = rounds.get((p, r), 0) + n
            del table
    disk = sum(p.stat().st_size for p in t.parts())
    print(json.dumps({"rows": len(rows), "baseline_kib": base, "peak_kib": peak,
                      "seconds": seconds, "parts": len(t.parts()), "disk_bytes": disk,
                      "decoded_bytes": decoded, "messages": len(t),
                      "largest_round_bytes": max(rounds.values(), default=0),
                      "largest_message_bytes": largest, "largest_row_group_bytes": group}))
""")


def _run(scenario: str, folder: Path) -> float:
    folder.parent.mkdir(parents=True, exist_ok=True)
    toml = folder.parent / f"{folder.name}.toml"
    toml.write_text(scenario)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ppknn", "run", str(toml), "--overwrite"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _score(folder: Path, pythonpath: Path | None = None) -> dict:
    env = dict(os.environ)
    cwd = None
    if pythonpath is not None:  # that package first, from a folder holding no other
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath.resolve()),
                                             env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        cwd = tempfile.gettempdir()
    out = subprocess.run([sys.executable, "-c", SCORE, str(folder.resolve())], check=True,
                         capture_output=True, text=True, env=env, cwd=cwd)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run both cases and print the table (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parties", type=int, default=1000)
    ap.add_argument("--ring-queries", type=int, default=100)
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--output", type=Path, default=Path("results/bench-leakage-memory"))
    ap.add_argument("--ring-flush-every", type=int, default=256,
                    help="Messages per transcript part (one row group) in the ring run.")
    ap.add_argument("--dptt-flush-every", type=int, default=4,
                    help="Messages per transcript part (one row group) in the DP-TT run.")
    ap.add_argument("--skip-runs", action="store_true",
                    help="Score the folders already in --output (no new runs).")
    ap.add_argument("--pythonpath", type=Path, default=None,
                    help="Score with the ppknn package in this folder (before/after).")
    ap.add_argument("--only", choices=("ring", "dptt"), default=None,
                    help="Run and score one case only.")
    args = ap.parse_args(argv)
    out = args.output
    rows_ring = args.parties * 20 + args.ring_queries
    cases = {
        "ring": (out / "ring", RING.format(n=args.parties, rows=rows_ring,
                                           tf=args.ring_queries / rows_ring,
                                           flush=args.ring_flush_every, out=out / "ring")),
        "dptt": (out / "dptt", DPTT.format(points=args.points,
                                           rows=args.points + args.queries,
                                           tf=args.queries / (args.points + args.queries),
                                           flush=args.dptt_flush_every, out=out / "dptt")),
    }
    report = {}
    for name, (folder, scenario) in cases.items():
        if args.only and name != args.only:
            continue
        run_s = None if args.skip_runs else _run(scenario, folder)
        measured = _score(folder, args.pythonpath)
        measured["run_seconds"] = run_s
        report[name] = measured
        print(f"{name}: {measured['messages']:,} messages in {measured['parts']} parts "
              f"({measured['disk_bytes'] / 2**20:.1f} MiB on disk, "
              f"{measured['decoded_bytes'] / 2**20:.1f} MiB decoded; largest round "
              f"{measured['largest_round_bytes'] / 2**20:.1f} MiB, message "
              f"{measured['largest_message_bytes'] / 2**20:.1f} MiB, row group "
              f"{measured['largest_row_group_bytes'] / 2**20:.1f} MiB); scoring "
              f"{measured['rows']} rows took {measured['seconds']:.1f} s, peak RSS "
              f"{measured['peak_kib'] / 1024:.0f} MiB (after imports "
              f"{measured['baseline_kib'] / 1024:.0f} MiB)", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    name = "memory.json" if args.pythonpath is None else "memory-pythonpath.json"
    (out / name).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
