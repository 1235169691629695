"""Scale-out benchmark: hosted layout vs one actor per party vs in-process, large n, sweeps.

Run:  python benchmarks/bench_scale.py [--quick]

Prints, each measured in this run:
1. n = 64, 1,000 abalone queries, r = 2: wall time of the protocol on the in-process
   runtime, on Ray with one actor per party, and on Ray with the hosted layout (one host
   actor per CPU); ratios to in-process.
2. n = 1,000 and 10,000 logical parties on Ray (hosted) and n = 10,000 in-process, on
   synthetic data: wall time and peak memory (driver, and the sum of the host actors' peaks).
3. A sweep of 100 scenario runs fanned out over the local Ray cluster vs the same runs one
   by one: speed-up, CPUs, and whether the combined tables are equal.

Writes the figures to ``--out`` (default ``results/bench/scale``): ``scale.json`` and a
plot, ``scale.png``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np
import ray

from ppknn.core.data import DomainBounds, load_dataset, partition
from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.protocols.ppknn_ring import PPKNNConfig, random_ring, ring_from_start, run_ppknn
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def setup(dataset: str, n: int, n_queries: int, seed: int = 0):
    ds = load_dataset(dataset)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(ds.y))
    test, train = perm[:n_queries], perm[n_queries:]
    parts = partition(ds.y[train], n, rng=rng)
    names = [f"owner-{i:05d}" for i in range(n)]
    ring, start = random_ring(names, rng)
    X_train, y_train = ds.X[train], ds.y[train]  # once: not one copy of the data per party
    by_name = {nm: PartySpec(nm, RingDataOwner, {
        "party_id": nm, "index": i, "X": X_train[p], "y": y_train[p],
        "n_classes": ds.n_classes, "run_id": "scale", "seed": seed})
        for i, (nm, p) in enumerate(zip(names, parts))}
    # ring order from the start node: in the hosted layout neighbours share a host
    specs = [by_name[p] for p in ring_from_start(ring, start)]
    config = PPKNNConfig(params=TopKParams(k=5, p0=1.0, d=0.5, rounds=2,
                                           max_distance=DomainBounds.from_data(
                                               ds.X, warn=False).diameter))
    return ds.X[test], specs, ring, start, config


def timed_run(kind, queries, specs, ring, start, config, repeats, **options):
    rt = make_runtime(kind, **options)
    t0 = time.perf_counter()
    rt.start(specs, RunContext(run_id="scale", secure_channels=True, record_batch=1 << 14,
                               flush_every=1 << 16, party_timeout_s=600))
    startup = time.perf_counter() - t0
    times, preds = [], None
    for _ in range(1 + repeats):
        t0 = time.perf_counter()
        preds = run_ppknn(rt, queries, config, ring=ring, start=start).predictions
        times.append(time.perf_counter() - t0)
    hosts_peak = sum(rt.host_peak_rss_mb()) if kind == "ray" else 0.0
    rt.close_transcript()
    rt.shutdown()
    # the first run computes the owners' distances to the batch; repeats of the same batch
    # reuse them (the owners' neighbour cache), so both are reported
    return Timing(times[0], statistics.median(times[1:]) if repeats else times[0]), \
        startup, preds, hosts_peak


class Timing:
    """Wall time of the first run (distances computed) and median of the repeats (cached)."""

    def __init__(self, first: float, repeat: float) -> None:
        self.first, self.repeat = first, repeat

    def ratio(self, base: Timing) -> str:
        return (f"first {self.first / base.first:5.2f}, repeat {self.repeat / base.repeat:5.2f}")

    def __str__(self) -> str:
        return f"first {self.first:7.3f} s, repeat {self.repeat:7.3f} s"


def part_layouts(args) -> dict:
    """Layouts side by side, repeats interleaved so machine noise hits all alike.

    Two phases: in-process with both hosted layouts, then in-process with one
    actor per party (64 idle Ray workers slow everything on a 2-core machine, so
    that layout is compared with in-process runs made while its actors are up).
    """
    q, specs, ring, start, config = setup("abalone", 64, args.queries)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    phases = [[(f"Ray hosted ({cpus} hosts)", {"layout": "hosted", "hosts": cpus}),
               ("Ray hosted (1 host)", {"layout": "hosted", "hosts": 1})],
              [("Ray actor per party", {"layout": "actor-per-party"})]]
    print(f"\n1. n=64, {len(q)} abalone queries, k=5, r=2, channels on; Ray: {cpus} CPUs. "
          f"First run (owners compute distances), then median of {args.repeats} repeats of "
          "the batch (distances cached), layouts interleaved with in-process")
    context = RunContext(run_id="scale", secure_channels=True, record_batch=1 << 14,
                         flush_every=1 << 16, party_timeout_s=600)
    summary, rows = {}, []
    for phase in phases:
        runtimes = {"in-process": make_runtime("inprocess")}
        runtimes["in-process"].start(specs, context)
        startup = {}
        for name, options in phase:
            runtimes[name] = make_runtime("ray", **options)
            t0 = time.perf_counter()
            runtimes[name].start(specs, context)
            startup[name] = time.perf_counter() - t0
        first, repeat, preds = {}, {name: [] for name in runtimes}, {}

        def once(name: str, runtimes=runtimes, preds=preds) -> float:
            t0 = time.perf_counter()
            preds[name] = run_ppknn(runtimes[name], q, config, ring=ring,
                                    start=start).predictions
            return time.perf_counter() - t0

        for name in runtimes:  # the first run computes the owners' distances to the batch
            first[name] = once(name)
        for _ in range(args.repeats):  # repeats of the batch reuse them (the owners' cache)
            for name in runtimes:
                repeat[name].append(once(name))
        for rt in runtimes.values():
            rt.close_transcript()
            rt.shutdown()
        assert all(np.array_equal(preds["in-process"], p) for p in preds.values()), \
            "layouts disagree"
        med = {name: statistics.median(ts) for name, ts in repeat.items()}
        for name in runtimes:
            rows.append({"phase": phases.index(phase) + 1, "layout": name,
                         "first_s": first[name], "repeat_s": med[name],
                         "startup_s": startup.get(name)})
            line = f"   {name:<24} first {first[name]:7.3f} s   repeat {med[name]:7.3f} s"
            if name in startup:
                r_first, r_rep = first[name] / first["in-process"], med[name] / med["in-process"]
                summary[name] = (r_first, r_rep)
                line += (f"   ratio to in-process: first {r_first:5.2f}, repeat {r_rep:5.2f}"
                         f"   (start-up {startup[name]:.1f} s)")
            print(line)
    hosted, apa = phases[0][0][0], phases[1][0][0]
    print(f"   hosted / actor-per-party (ratios to in-process divided): first "
          f"{summary[hosted][0] / summary[apa][0]:5.2f}, "
          f"repeat {summary[hosted][1] / summary[apa][1]:5.2f}")
    return {"n": 64, "queries": len(q), "cpus": cpus, "runs": rows,
            "ratio_to_inprocess": {k: {"first": v[0], "repeat": v[1]}
                                   for k, v in summary.items()}}


def part_large(args) -> dict:
    n_ray, n_local = (200, 1000) if args.quick else (1000, 10000)
    rows = 60_000 if not args.quick else 8_000
    data = f"synthetic:classification?rows={rows}&features=8&classes=3&seed=1"
    cpus = int(ray.cluster_resources().get("CPU", 1))
    print(f"\n2. synthetic {rows} rows, 200 queries, k=5, r=2, channels on")
    ray_rows = []
    for n in (n_ray, n_local):
        q, specs, ring, start, config = setup(data, n, 200)
        t_r, s_r, _, hosts_peak = timed_run("ray", q, specs, ring, start, config, 0,
                                            layout="hosted", hosts=cpus)
        driver_ray = peak_mb()
        ray_rows.append({"n": n, "protocol_s": t_r.first, "startup_s": s_r,
                         "driver_peak_mib": driver_ray, "hosts_peak_mib": hosts_peak})
        print(f"   Ray hosted, n={n:>6}: {t_r.first:8.2f} s protocol, {s_r:.1f} s start-up; "
              f"peak memory: driver {driver_ray:.0f} MiB, {cpus} hosts {hosts_peak:.0f} MiB "
              "in all")
    before = peak_mb()
    q, specs, ring, start, config = setup(data, n_local, 200)
    t_l, s_l, _, _ = timed_run("inprocess", q, specs, ring, start, config, 0)
    print(f"   in-process, n={n_local:>6}: {t_l.first:8.2f} s protocol, {s_l:.1f} s start-up; "
          f"peak memory (driver, whole benchmark so far) {peak_mb():.0f} MiB "
          f"(was {before:.0f} MiB before it)")
    return {"rows": rows, "queries": 200,
            "ray_hosted": ray_rows,
            "inprocess": {"n": n_local, "protocol_s": t_l.first, "startup_s": s_l,
                          "driver_peak_mib": peak_mb()}}


def cpu_busy_s() -> float:
    """Seconds of CPU time the whole machine has spent busy since boot (Linux /proc/stat)."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def part_sweep(args) -> dict:
    from ppknn.simulations.sweep import Sweep, run_sweep

    dataset, seeds = ("pima", list(range(5))) if args.quick else ("abalone", list(range(25)))
    spec = Sweep.model_validate({
        "sweep": {"name": "bench", "seeds": seeds},
        "base": {"data": {"dataset": dataset}, "runtime": {"channels": False}},
        "grid": {"protocol.k": [1, 9], "parties.n": [4, 8]},
    })
    n_runs = len(spec.runs())
    out = args.out / "sweep"
    cpus = int(ray.cluster_resources().get("CPU", 1))
    busy0, t0 = cpu_busy_s(), time.perf_counter()
    par = run_sweep(spec, parallel="ray", output=out / "ray")
    t_par = time.perf_counter() - t0
    busy_par = (cpu_busy_s() - busy0) / t_par
    busy0, t0 = cpu_busy_s(), time.perf_counter()
    seq = run_sweep(spec, parallel="sequential", output=out / "seq")
    t_seq = time.perf_counter() - t0
    busy_seq = (cpu_busy_s() - busy0) / t_seq
    strip = [{k: v for k, v in r.items() if k != "protocol_s"} for r in par]
    equal = strip == [{k: v for k, v in r.items() if k != "protocol_s"} for r in seq]
    print(f"\n3. sweep of {n_runs} runs ({dataset}, grid k x n x {len(seeds)} seeds, in-process "
          f"runtime per run; Ray run first, so its time includes starting and warming workers)")
    print(f"   fanned out over Ray: {t_par:7.1f} s, machine busy {busy_par:4.2f} of {cpus} CPUs")
    print(f"   one by one:          {t_seq:7.1f} s, machine busy {busy_seq:4.2f} of {cpus} CPUs")
    print(f"   speed-up {t_seq / t_par:4.2f}; combined tables equal (timings excepted): {equal}")
    return {"runs": n_runs, "dataset": dataset, "cpus": cpus, "ray_s": t_par,
            "sequential_s": t_seq, "busy_cpus_ray": busy_par, "busy_cpus_sequential": busy_seq,
            "speedup": t_seq / t_par, "tables_equal": equal}


def write_results(results: dict, out: Path) -> None:
    """``scale.json`` and ``scale.png`` (one panel per part that ran) in ``out``."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(results, indent=1))
    panels = [k for k in ("layouts", "large", "sweep") if k in results]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, key in zip(axes[0], panels):
        r = results[key]
        if key == "layouts":
            names = list(r["ratio_to_inprocess"])
            x = np.arange(len(names))
            for off, which in ((-0.2, "first"), (0.2, "repeat")):
                ax.bar(x + off, [r["ratio_to_inprocess"][nm][which] for nm in names], 0.4,
                       label=which)
            ax.axhline(1.0, color="grey", lw=0.8)
            ax.axhline(1.5, color="red", lw=0.8, ls="--", label="1.5x")
            ax.set_yscale("log")
            ax.set_xticks(x, names, rotation=15, fontsize=8)
            ax.set_title(f"n = {r['n']}, {r['queries']} queries: Ray / in-process")
            ax.legend(fontsize=8)
        elif key == "large":
            labels = [f"Ray hosted\nn = {h['n']:,}" for h in r["ray_hosted"]]
            labels.append(f"in-process\nn = {r['inprocess']['n']:,}")
            ax.bar(labels, [h["protocol_s"] for h in r["ray_hosted"]]
                   + [r["inprocess"]["protocol_s"]])
            ax.set_ylabel("protocol wall time (s)")
            ax.set_title(f"large n ({r['queries']} queries)")
        else:
            ax.bar(["Ray fan-out", "one by one"], [r["ray_s"], r["sequential_s"]])
            ax.set_ylabel("wall time (s)")
            ax.set_title(f"sweep of {r['runs']} runs: speed-up {r['speedup']:.2f}, "
                         f"busy {r['busy_cpus_ray']:.2f}/{r['cpus']} CPUs", fontsize=9)
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, out / "scale.png", dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--parts", default="123", help="which parts to run, e.g. 13")
    ap.add_argument("--out", type=Path, default=Path("results/bench/scale"),
                    help="folder for scale.json and scale.png")
    args = ap.parse_args()
    ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    print(f"machine: {os.cpu_count()} CPUs")
    results: dict = {"cpus": os.cpu_count()}
    if "1" in args.parts:
        results["layouts"] = part_layouts(args)
    if "2" in args.parts:
        results["large"] = part_large(args)
    if "3" in args.parts:
        results["sweep"] = part_sweep(args)
    ray.shutdown()
    write_results(results, args.out)
    print(f"\nresults in {args.out}/scale.json and scale.png")


if __name__ == "__main__":
    main()
