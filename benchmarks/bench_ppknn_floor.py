"""PP-kNN cold and warm against its floor: this checkout beside another tree, alternated.

Run:  git worktree add /tmp/ppknn-old <commit>
      python benchmarks/bench_ppknn_floor.py --old /tmp/ppknn-old [--rounds 8] [--samples 3]
      python benchmarks/bench_ppknn_floor.py --old numpy-step   # this checkout, PP-TopK's
                                               # compiled step off on the "old" side
      python benchmarks/bench_ppknn_floor.py --parts 10   # where a cold run's time goes

Each sample side runs in a fresh interpreter (``--child``), alternating this
checkout and the ``--old`` tree (imported in place of the installed package).
A side reports, for in-process PP-kNN on abalone with channels on (the
settings of ``python -m benchmarks``' PP-kNN rows):

* cold: fresh runs through the scenario runner, start-up + protocol
  (``timings``), wall and process CPU time;
* warm: further runs on one started runtime (the owners' distances cached);
* the floor, timed as ``python -m benchmarks`` times it (``_ppknn_floors``);
* a SHA-256 of the predictions (both sides must agree).

Medians with their ranges are printed per side, and each side's cold median
over the floor median of the whole run; then each side's per-process minimum of
cold (the fastest sample of each fresh interpreter) and, per round, whether new's
minimum is below old's (a sign test that a loaded machine's spread does not swamp).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _use_tree(tree: str) -> None:
    """Import ``ppknn`` from ``tree`` (:func:`in_tree.use_tree`)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from in_tree import use_tree

    use_tree(tree)


def _scenario(n: int, queries: int):
    """The measured run: in-process PP-kNN on abalone, channels on (both modes time it)."""
    from ppknn.simulations.scenario import parse_scenario

    return parse_scenario({"data": {"dataset": "abalone", "test_fraction": 0.25,
                                    "max_queries": queries},
                           "parties": {"n": n}, "protocol": {"name": "ppknn-ring", "k": 5},
                           "runtime": {"kind": "inprocess", "channels": True}})


def child(n: int, queries: int, samples: int) -> dict:
    """One side: cold and warm samples, the floor and a digest of the predictions."""
    from benchmarks.__main__ import _ppknn_floors
    from benchmarks.bench_ppknn import build
    from ppknn.core.runtime import RunContext, inprocess, make_runtime
    from ppknn.protocols.ppknn_ring import PPKNNConfig, driver, run_ppknn
    from ppknn.protocols.ppknn_ring.pp_topk import TopKParams
    from ppknn.simulations.prepare import prepare_data
    from ppknn.simulations.runner import execute

    cpu = [0.0]

    def timed(fn):
        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                cpu[0] += time.process_time() - t0
        return wrapper

    inprocess.InProcessRuntime.start = timed(inprocess.InProcessRuntime.start)
    driver.run_ppknn = timed(driver.run_ppknn)  # what the registry's driver calls
    sc = _scenario(n, queries)

    def cold():
        cpu[0] = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = execute(sc)
        return result, result.timings["startup_s"] + result.timings["protocol_s"], cpu[0]

    result = cold()[0]  # imports and first-use caches
    colds, cpus = [], []
    for _ in range(samples):
        result, wall, used = cold()
        colds.append(wall)
        cpus.append(used)
    preds = json.dumps([o.predictions.tolist() for o in result.outcomes]).encode()
    floor = _ppknn_floors(result, prepare_data(sc), 5, k=5)["floor_s"]

    ds, _, test, specs, ring, start, bounds = build(n, queries)
    config = PPKNNConfig(params=TopKParams(k=5, p0=1.0, d=0.5, rounds=2,
                                           max_distance=bounds.diameter))
    rt = make_runtime("inprocess")
    rt.start(specs, RunContext(run_id="bench", secure_channels=True, record_batch=4096,
                               flush_every=1 << 20))
    warm = []
    for i in range(samples + 1):
        t0 = time.perf_counter()
        run_ppknn(rt, ds.X[test], config, ring=ring, start=start)
        if i:
            warm.append(time.perf_counter() - t0)
    rt.close_transcript()
    rt.shutdown()
    return {"cold": colds, "cpu": cpus, "warm": warm, "floor": floor,
            "predictions": hashlib.sha256(preds).hexdigest()}


# (label, module, attribute path, floor part it holds or "") timed by ``--parts``; each
# part's own time excludes the parts timed inside it
_PARTS = [
    ("start-up (runtime, hosts, owners; less the parts below)", "ppknn.core.runtime.inprocess",
     "InProcessRuntime.start", ""),
    ("owners' set-up", "ppknn.protocols.ppknn_ring.parties.ring_owner",
     "RingDataOwner.__init__", ""),
    ("key pairs", "ppknn.core.channels", "SecureEndpoint.__init__", "key agreements"),
    ("distances (a cdist call per owner)", "ppknn.protocols.ppknn_ring.parties.ring_owner",
     "euclidean_distances", "distances"),
    ("local top-k", "ppknn.protocols.ppknn_ring.parties.ring_owner", "local_topk",
     "local selection"),
    ("load_queries, the rest", "ppknn.protocols.ppknn_ring.parties.ring_owner",
     "RingDataOwner.load_queries", ""),
    ("PP-TopK steps", "ppknn.protocols.ppknn_ring.parties.ring_owner",
     "RingDataOwner.topk_step", ""),
    ("votes", "ppknn.protocols.ppknn_ring.parties.ring_owner", "RingDataOwner.local_votes", ""),
    ("secure sum steps", "ppknn.protocols.ppknn_ring.parties.ring_owner",
     "RingDataOwner.ring_sum_step", ""),
    ("totals received (predictions)", "ppknn.protocols.ppknn_ring.parties.ring_owner",
     "RingDataOwner.receive_total", ""),
    ("pair keys (X25519, HKDF, AES-GCM set-up)", "ppknn.core.channels", "SecureEndpoint._cipher",
     "key agreements"),
    ("seal (encrypt; less the keys)", "ppknn.core.channels", "SecureEndpoint.seal", "sealing"),
    ("open (decrypt, decode; less the keys)", "ppknn.core.channels", "SecureEndpoint.open",
     "sealing"),
    ("host: calls, encoding, records (less the above)", "ppknn.core.runtime.host",
     "PartyHost.invoke", ""),
    ("runtime: running queued calls", "ppknn.core.runtime.inprocess", "_Batch.run", ""),
]


def parts(n: int, queries: int, runs: int) -> None:
    """Where a cold run's time goes: each part's own time per run, beside the floor's parts.

    Wall-clock timers around the functions in ``_PARTS`` (nested parts subtracted), over
    ``runs`` cold runs after one warm-up, in this checkout. The timers add ~5% to a run.
    """
    import importlib

    from benchmarks.__main__ import _ppknn_floors
    from ppknn.simulations.prepare import prepare_data
    from ppknn.simulations.runner import execute

    own = {label: 0.0 for label, *_ in _PARTS}
    stack: list[float] = []

    def timed(fn, label):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            stack.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                inner = stack.pop()
                own[label] += spent - inner
                if stack:
                    stack[-1] += spent
        return wrapper

    for label, module, path, _ in _PARTS:
        owner = importlib.import_module(module)
        *outer, name = path.split(".")
        for attr in outer:
            owner = getattr(owner, attr)
        setattr(owner, name, timed(getattr(owner, name), label))
    sc = _scenario(n, queries)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        execute(sc)  # imports and first-use caches
        for key in own:
            own[key] = 0.0
        total = 0.0
        for _ in range(runs):
            result = execute(sc)
            total += result.timings["startup_s"] + result.timings["protocol_s"]
        floors = _ppknn_floors(result, prepare_data(sc), 5, k=5)
    floor_of = {"distances": floors["floor_distances_s"],
                "local selection": floors["floor_selection_s"],
                "key agreements": floors["floor_key_agreements_s"],
                "sealing": floors["floor_channels_s"]}
    timed_total = sum(own.values())
    print(f"PP-kNN cold, n = {n}, {queries} queries, channels on: {total / runs * 1e3:.1f} ms "
          f"a run (mean of {runs}, timers on); floor {floors['floor_s'] * 1e3:.1f} ms")
    print(f"{'part':56s} {'ms a run':>9s}  floor part")
    for label, _, _, floor in _PARTS:
        print(f"{label:56s} {own[label] / runs * 1e3:9.2f}  {floor}")
    print(f"{'driver and the rest (untimed)':56s} {(total - timed_total) / runs * 1e3:9.2f}")
    for name, value in floor_of.items():
        print(f"floor: {name:49s} {value * 1e3:9.2f}")


def _summary(values: list[float]) -> str:
    v = sorted(values)
    return f"{statistics.median(v) * 1e3:.1f} ms ({v[0] * 1e3:.1f}-{v[-1] * 1e3:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=int, metavar="RUNS", help="no A/B: time the parts of "
                    "RUNS cold runs of this checkout beside the floor's parts")
    ap.add_argument("--old", help="the other tree (e.g. a git worktree), or "
                    "'numpy-step': this checkout with PP-TopK's compiled step off")
    ap.add_argument("--parties", type=int, default=64)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=8, help="old/new pairs, order alternated")
    ap.add_argument("--samples", type=int, default=3, help="cold and warm samples per side")
    ap.add_argument("--child", choices=["old", "new"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parts is not None:
        if args.parts < 1:
            ap.error(f"--parts must be at least 1, got {args.parts}")
        sys.path.insert(0, str(ROOT))
        parts(args.parties, args.queries, args.parts)
        return
    if args.old is None:
        ap.error("give --old TREE (or 'numpy-step') for an A/B, or --parts RUNS")
    if args.child:
        numpy_step = args.child == "old" and args.old == "numpy-step"
        tree = args.old if args.child == "old" and not numpy_step else str(ROOT)
        if tree != str(ROOT):
            _use_tree(tree)
        else:
            sys.path.insert(0, tree)
        import ppknn.protocols.ppknn_ring.parties.ring_owner as owner
        from ppknn.protocols.ppknn_ring import pp_topk

        assert owner.__file__.startswith(tree), f"{owner.__file__} is not from {tree}"
        if numpy_step:
            pp_topk._kernel = None
        kind = "numpy" if getattr(pp_topk, "_kernel", None) is None else "compiled"
        print(f"PP-TopK step: {kind}", file=sys.stderr)
        print(json.dumps(child(args.parties, args.queries, args.samples)))
        return
    sides = {"old": [], "new": []}
    for i in range(args.rounds):
        for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
            cmd = [sys.executable, __file__, "--child", side, "--old", args.old,
                   "--parties", str(args.parties), "--queries", str(args.queries),
                   "--samples", str(args.samples)]
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=os.getcwd(),
                                 check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            sides[side].append(row)
            print(f"{side}: cold {[round(x * 1e3, 1) for x in row['cold']]} ms, cpu "
                  f"{[round(x * 1e3, 1) for x in row['cpu']]} ms, floor "
                  f"{row['floor'] * 1e3:.1f} ms", flush=True)
    floor = statistics.median(r["floor"] for rows in sides.values() for r in rows)
    med = {}
    for side, rows in sides.items():
        cold = [x for r in rows for x in r["cold"]]
        med[side] = statistics.median(cold), statistics.median(
            [x for r in rows for x in r["cpu"]]), statistics.median(
            [x for r in rows for x in r["warm"]])
        print(f"{side}: cold {_summary(cold)}, cold CPU "
              f"{_summary([x for r in rows for x in r['cpu']])}, warm "
              f"{_summary([x for r in rows for x in r['warm']])}; cold / floor "
              f"{med[side][0] / floor:.2f}")
    print(f"floor (median of every side) {floor * 1e3:.1f} ms; new / old: cold "
          f"{med['new'][0] / med['old'][0]:.2f}, cold CPU {med['new'][1] / med['old'][1]:.2f}, "
          f"warm {med['new'][2] / med['old'][2]:.2f}")
    # each fresh interpreter's fastest cold sample: less sensitive to a loaded machine than
    # the pooled median; old and new of one round are a pair (their order alternates)
    lows = {side: [min(r["cold"]) for r in rows] for side, rows in sides.items()}
    for side, values in lows.items():
        print(f"{side}: per-process minimum of cold {_summary(values)}")
    faster = sum(n < o for o, n in zip(lows["old"], lows["new"]))
    print(f"rounds where new's minimum is below old's: {faster} of {len(lows['new'])}; "
          f"median paired difference "
          f"{statistics.median(n - o for o, n in zip(lows['old'], lows['new'])) * 1e3:+.1f} ms")
    same = {r["predictions"] for rows in sides.values() for r in rows}
    print("predictions identical on both sides:", len(same) == 1)


if __name__ == "__main__":
    main()
