"""Ray Compiled Graphs against ordinary actor calls for a ring of hops.

``python benchmarks/bench_compiled_graph.py [--actors 16 64] [--repeats 20]``

The ring's critical path is a chain of actor calls, each hop handing a
``(1000, 5)`` float64 vector (40 KB, a PP-TopK vector) to the next actor. This
script times, side by side in one Ray session, for a chain of ``n`` bare actors:

* ordinary calls chained by reference (no driver round trip between hops,
  as the runtime chains them), per execution of the whole chain;
* the same chain as a Ray Compiled Graph (``experimental_compile``): the
  compile time a user would pay once per ring, then per execution;
* the CPU the actors' processes burn over 5 s of idling, with the compiled
  graph alive (its actors wait on their channels) and with the ordinary actors
  alive, in cores (1.0: one core busy all the time; read from ``/proc``).

It prints one line per measure; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import ray
from ray.dag import InputNode


@ray.remote(num_cpus=0)
class Hop:
    """A bare hop: returns what it is given (the floor of any party step)."""

    def step(self, x: np.ndarray) -> np.ndarray:
        return x


def _ordinary(actors: list, x: np.ndarray) -> np.ndarray:
    ref = ray.put(x)
    for a in actors:
        ref = a.step.remote(ref)
    return ray.get(ref)


def _hop_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"Hop" in f.read():
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def _idle_cores(seconds: float = 5.0) -> float:
    """Cores the Hop actors' processes keep busy while nothing is asked of them."""
    pids = _hop_pids()
    before = _cpu_seconds(pids)
    time.sleep(seconds)
    return (_cpu_seconds(pids) - before) / seconds


def main() -> None:  # noqa: D103
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--actors", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    ray.init(address="local", include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    x = np.random.default_rng(0).random((1000, 5))
    print(f"ray {ray.__version__}, {os.cpu_count()} cores, load before "
          f"{os.getloadavg()[0]:.2f}")
    for n in args.actors:
        actors = [Hop.remote() for _ in range(n)]
        ray.get([a.step.remote(None) for a in actors])  # started
        _ordinary(actors, x)  # warm
        ordinary = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            _ordinary(actors, x)
            ordinary.append(time.perf_counter() - t0)
        idle_ordinary = _idle_cores()
        t0 = time.perf_counter()
        with InputNode() as inp:
            node = inp
            for a in actors:
                node = a.step.bind(node)
        graph = node.experimental_compile()
        compile_s = time.perf_counter() - t0
        ray.get(graph.execute(x))  # warm
        compiled = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = ray.get(graph.execute(x))
            compiled.append(time.perf_counter() - t0)
        assert np.array_equal(out, x)
        idle_compiled = _idle_cores()
        graph.teardown()
        for a in actors:
            ray.kill(a)
        o, c = statistics.median(ordinary), statistics.median(compiled)
        print(f"n={n}: ordinary chain {o * 1e3:.1f} ms ({o / n * 1e3:.2f} ms/hop); compiled "
              f"graph {c * 1e3:.1f} ms ({c / n * 1e3:.2f} ms/hop, {o / c:.1f}x faster) after "
              f"compiling for {compile_s:.1f} s (= {compile_s / max(o - c, 1e-9):.0f} chain "
              f"executions to break even); idle, the actors burn {idle_ordinary:.2f} cores "
              f"(ordinary) against {idle_compiled:.2f} (compiled)")
    ray.shutdown()


if __name__ == "__main__":
    main()
