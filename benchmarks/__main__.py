"""The benchmark suite: ``python -m benchmarks [--quick] [--output DIR]``.

Every figure is measured side by side in one run on this machine, and start-up a user
pays is inside the timed region:

* **end to end**: ``ppknn run`` as a user types it (a fresh Python process: interpreter,
  imports, data, Ray start-up, parties, protocol, baseline, results folder), in-process
  and on Ray (hosted and one actor per party), beside a bare ``ray.init`` +
  ``ray.shutdown`` in a fresh process, alternating over a few rounds (medians, every
  round kept); the ratio that matters is (Ray − bare Ray) / in-process.
* **actors**: starting n ring-owner actors through the runtime vs n bare Ray actors (an
  empty class with one method), each until every actor answers, alternating over a few
  rounds (median ratio and range); the per-call cost of a runtime call vs a bare actor
  call; the resident memory of a party worker vs a bare one.
* **party-side compute**: in-process PP-kNN *cold* (fresh parties: start-up + the first
  run; the median of several fresh runs, each sample kept) vs scikit-learn brute kNN
  (fit + predict, first call and median of repeats) on the same split, channels on; the
  first run and start-up also separately.
* **DP owner**: interactive DP k-NN and r-N answers vs scikit-learn's
  ``KNeighborsClassifier`` / ``RadiusNeighborsClassifier`` on the same queries.
* **scale** (20,000 and 100,000 parties; 40 with ``--quick``): ``ppknn run`` with the
  hosted layout and many logical parties, end to end, split into start-up, protocol,
  measure, leakage table and the rest (imports, data, results files, shut-down), with
  the peak memory of all the run's processes.
* **peers** (optional): MPyC secure kNN beside the ring, and a Flower simulation beside
  ``ppknn run``, when the peers' environment exists (``python -m benchmarks.bench_peers
  --install``; otherwise skipped with a message); ``peers.csv``/``peers.png`` beside.

Framework modules without cached bytecode are compiled once first, as a first import
does (``--no-compile`` leaves them; see :func:`_bytecode`). It prints one table, and
writes ``bench.json`` (every measurement, the machine, the settings), ``bench.png``
(the ratios) and, with the scale case, ``scale.png`` (wall time by phase) into
``--output`` (default ``results/bench``; an existing folder is refused unless
``--overwrite``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUICK = {"e2e_parties": 4, "e2e_queries": 50, "e2e_layouts": ("hosted",), "e2e_rounds": 2,
         "actor_parties": 3, "actor_rounds": 2, "calls": 50, "ppknn_parties": (4, 16),
         "ppknn_queries": 100, "dp_queries": 100, "scale_parties": (40,), "repeats": 3}
FULL = {"e2e_parties": 64, "e2e_queries": 1000, "e2e_layouts": ("hosted", "actor-per-party"),
        "e2e_rounds": 5, "actor_parties": 64, "actor_rounds": 3, "calls": 1000,
        "ppknn_parties": (4, 16, 64),
        "ppknn_queries": 1000, "dp_queries": 1000, "scale_parties": (20_000, 100_000),
        "repeats": 5}


# --------------------------------------------------------------------------- helpers
def _scenario(path: Path, *, n: int, queries: int, kind: str, layout: str = "hosted",
              protocol: str = 'name = "ppknn-ring"', dataset: str = "abalone",
              output: Path) -> Path:
    path.write_text(
        f'[run]\nname = "bench"\nseed = 1\noutput = "{output}"\n\n'
        f'[data]\ndataset = "{dataset}"\ntest_fraction = 0.25\nmax_queries = {queries}\n\n'
        f"[parties]\nn = {n}\n\n[protocol]\n{protocol}\n\n"
        f'[runtime]\nkind = "{kind}"\nlayout = "{layout}"\n')
    return path


def _wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    _check(cmd, done.returncode, done.stdout, done.stderr)
    return wall


def _check(cmd: list[str], code: int, stdout: str, stderr: str) -> None:
    """Raise when a command failed, quoting its error line (not just the tail of stderr)."""
    if code != 0:
        said = [line[:500] for line in (stdout + "\n" + stderr).splitlines()
                if line.startswith("error:")]
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}): {' | '.join(said)}\n"
                           f"{stderr[-1500:]}")


def _tree(root: int) -> list[int]:
    """``root`` and every process descended from it (Linux)."""
    children: dict[int, list[int]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _run_tree_peak(cmd: list[str], every_s: float = 1.0) -> dict[str, Any]:
    """Run ``cmd``; wall seconds, stderr and the peak summed RSS / PSS of its process tree.

    The tree is the command and everything it starts (its local Ray: GCS, raylet, the
    host and recorder workers), not other Ray instances on the machine.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"rss": 0.0, "pss": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            rows = [m for m in (_pid_memory_mib(p) for p in _tree(proc.pid)) if m]
            for k in peak:
                peak[k] = max(peak[k], sum(m[k] for m in rows))
            stop.wait(every_s)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    _check(cmd, proc.returncode, stdout, stderr)
    return {"wall_s": wall, "stderr": stderr, "peak_rss_mib": peak["rss"],
            "peak_pss_mib": peak["pss"]}


def _pid_memory_mib(pid: int) -> dict[str, float] | None:
    """Resident (RSS), proportional (PSS) and unique (USS) memory of ``pid`` in MiB (Linux).

    RSS counts every shared library page in full in every process; USS (private pages)
    is what one more such process costs; PSS shares the shared pages out among the
    processes that map them.
    """
    try:
        fields = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, value = line.split(":", 1)
            fields[key.strip()] = int(value.split()[0]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return {"rss": fields["Rss"], "pss": fields["Pss"],
            "uss": fields["Private_Clean"] + fields["Private_Dirty"]}


def _mean_memory(pids: list[int]) -> dict[str, float | None]:
    """Mean RSS / PSS / USS (MiB) over ``pids`` (None when none could be read)."""
    rows = [m for m in (_pid_memory_mib(p) for p in pids) if m is not None]
    return {k: (statistics.fmean(m[k] for m in rows) if rows else None)
            for k in ("rss", "pss", "uss")}


def _ray_pids(prefix: str) -> list[int]:
    """Ids of the processes whose title starts with ``prefix`` (Linux)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except (OSError, UnicodeDecodeError):
            continue
        if cmd.startswith(prefix):
            out.append(int(pid))
    return out


def _framework_sources() -> list[Path]:
    """The framework's Python source files (every ``ppknn`` subpackage, wherever installed)."""
    import ppknn
    import ppknn.core
    import ppknn.parties
    import ppknn.protocols
    import ppknn.simulations

    roots = {Path(m.__file__).parent for m in (ppknn, ppknn.core, ppknn.parties,
                                               ppknn.protocols, ppknn.simulations)}
    return sorted(f for root in roots for f in root.rglob("*.py"))


def _bytecode(compile_missing: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Make the framework's bytecode what a user's Python has, and say what was done.

    An interpreter caches each module's compiled bytecode beside its source on
    first import, and a regular ``pip install`` compiles it ahead; every later
    process (each Ray worker) loads it. With ``PYTHONDONTWRITEBYTECODE`` set (some
    sandboxes and CI images set it) an editable install never gets that cache, and
    every worker compiles every framework module from source again (about 50 ms a
    worker on this machine). With ``compile_missing`` the missing files are
    compiled once, as the first import would have done (``__pycache__`` folders,
    which git ignores); the result records which case was measured.
    """
    import importlib.util
    import py_compile

    sources = _framework_sources()
    missing = [f for f in sources if not Path(importlib.util.cache_from_source(str(f))).exists()]
    state = {"modules": len(sources), "without_bytecode": len(missing),
             "dont_write_bytecode": bool(sys.dont_write_bytecode), "compiled_now": 0}
    if missing and compile_missing:
        for f in missing:
            py_compile.compile(str(f), doraise=True)
        state["compiled_now"] = len(missing)
        log(f"bytecode: compiled {len(missing)} of {len(sources)} framework modules that had "
            "none (as a first import does; PYTHONDONTWRITEBYTECODE "
            f"{'is' if sys.dont_write_bytecode else 'is not'} set)")
    elif missing:
        log(f"bytecode: {len(missing)} of {len(sources)} framework modules have none; every "
            "worker compiles them from source (--no-compile)")
    return state


def _median(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """(first call, median of the repeats after it) wall seconds of ``fn``."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


# --------------------------------------------------------------------------- cases
def end_to_end(s: dict[str, Any], tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """``ppknn run`` in fresh processes: in-process, Ray layouts, and a bare Ray start.

    The runs alternate over ``e2e_rounds`` rounds (bare Ray, in-process, then each Ray
    layout, in every round), so a slow spell of the machine falls on one round, not on
    one kind of run. Each figure is the median of its rounds, and each ratio the median
    of the rounds' ratios, with every round kept.
    """
    py = sys.executable
    out: dict[str, Any] = {"parties": s["e2e_parties"], "queries": s["e2e_queries"]}
    bare = ("import ray; ray.init(address='local', include_dashboard=False, "
            "logging_level='ERROR', log_to_driver=False); ray.shutdown()")
    # the same start plus as many empty actors as the hosted layout starts (its default
    # hosts and the transcript recorder), each answering one call: what any actor program pays
    from ppknn.core.runtime.ray_runtime import default_hosts

    actors_n = default_hosts(os.cpu_count() or 1, s["e2e_parties"]) + 1
    bare_actors = ("import ray; ray.init(address='local', include_dashboard=False, "
                   "logging_level='ERROR', log_to_driver=False)\n"
                   "@ray.remote(num_cpus=0)\nclass A:\n    def ping(self):\n        return 1\n"
                   f"ray.get([a.ping.remote() for a in [A.remote() for _ in range({actors_n})]])\n"
                   "ray.shutdown()")
    # the same start, stopped as ppknn stops the Ray it started (core.runtime.ray_runtime.
    # stop_ray: the autoscaler monitor killed first, so Ray's shutdown does not wait a second
    # for it): what the hosted run pays beyond Ray, like for like. The same two lines as
    # stop_ray, written out: importing ppknn would add its imports to the baseline
    bare_quick_stop = ("import ray; ray.init(address='local', include_dashboard=False, "
                       "logging_level='ERROR', log_to_driver=False)\n"
                       "for info in ray._private.worker._global_node.all_processes.get("
                       "'monitor', []):\n    info.process.kill(); info.process.wait()\n"
                       "ray.shutdown()")
    runs = [("inprocess", "hosted")] + [("ray", lay) for lay in s["e2e_layouts"]]
    labels = (["bare_ray", "bare_ray_actors", "bare_ray_quick_stop"]
              + [k if k == "inprocess" else f"ray-{lay}" for k, lay in runs])
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(s["e2e_rounds"]):
        samples["bare_ray"].append(_wall([py, "-c", bare]))
        samples["bare_ray_actors"].append(_wall([py, "-c", bare_actors]))
        samples["bare_ray_quick_stop"].append(_wall([py, "-c", bare_quick_stop]))
        for (kind, layout), label in zip(runs, labels[3:]):
            folder = tmp / f"e2e-{label}-{r}"
            sc = _scenario(tmp / f"{label}-{r}.toml", n=s["e2e_parties"],
                           queries=s["e2e_queries"], kind=kind, layout=layout, output=folder)
            samples[label].append(_wall([py, "-m", "ppknn", "run", str(sc)]))
            out[f"{label}_timings"] = json.loads((folder / "summary.json").read_text())[
                "timings_s"]  # the last round's phases
        log(f"  round {r + 1}: " + ", ".join(
            f"{_E2E_NAMES.get(label, 'ppknn run ' + label)} "
            f"{samples[label][-1]:.1f} s" for label in labels))
    for label in labels:
        out[f"{label}_s"] = statistics.median(samples[label])
        out[f"{label}_samples_s"] = samples[label]
    for layout in s["e2e_layouts"]:
        label = f"ray-{layout}"
        minus = sorted((ray_s - bare_s) / local_s for ray_s, bare_s, local_s in
                       zip(samples[label], samples["bare_ray"], samples["inprocess"]))
        over = [ray_s / local_s for ray_s, local_s in zip(samples[label], samples["inprocess"])]
        out[f"{label}_minus_bare_over_inprocess"] = statistics.median(minus)
        out[f"{label}_minus_bare_over_inprocess_range"] = [minus[0], minus[-1]]
        out[f"{label}_over_inprocess"] = statistics.median(over)
        log(f"  (ppknn run {label} - bare) / in-process: median {statistics.median(minus):.2f} "
            f"over {len(minus)} rounds ({minus[0]:.2f}-{minus[-1]:.2f})")
        with_actors = sorted((ray_s - bare_s) / local_s for ray_s, bare_s, local_s in
                             zip(samples[label], samples["bare_ray_actors"],
                                 samples["inprocess"]))
        out[f"{label}_minus_bare_actors_over_inprocess"] = statistics.median(with_actors)
        out[f"{label}_minus_bare_actors_over_inprocess_range"] = [with_actors[0],
                                                                  with_actors[-1]]
        log(f"  (ppknn run {label} - bare with {actors_n} actors) / in-process: median "
            f"{statistics.median(with_actors):.2f} ({with_actors[0]:.2f}-{with_actors[-1]:.2f})")
        like = sorted((ray_s - bare_s) / local_s for ray_s, bare_s, local_s in
                      zip(samples[label], samples["bare_ray_quick_stop"], samples["inprocess"]))
        out[f"{label}_minus_bare_quick_stop_over_inprocess"] = statistics.median(like)
        out[f"{label}_minus_bare_quick_stop_over_inprocess_range"] = [like[0], like[-1]]
        log(f"  (ppknn run {label} - bare stopped as ppknn stops it) / in-process: median "
            f"{statistics.median(like):.2f} ({like[0]:.2f}-{like[-1]:.2f})")
    return out


_E2E_NAMES = {"bare_ray": "bare ray.init + shutdown",
              "bare_ray_actors": "bare ray.init + empty actors + shutdown",
              "bare_ray_quick_stop": "bare ray.init + shutdown, monitor killed first"}


class _Bare:
    """An empty actor class with one method (the floor a party actor is measured against)."""

    def ping(self, x: Any = None) -> Any:
        return x


def _settle(prefixes: tuple[str, ...], limit_s: float = 60.0) -> float:
    """Wait until no process titled with ``prefixes`` is left (killed workers exit in the
    background and would otherwise share the CPUs with the next start); seconds waited."""
    t0 = time.perf_counter()
    while any(_ray_pids(p) for p in prefixes) and time.perf_counter() - t0 < limit_s:
        time.sleep(0.1)
    return time.perf_counter() - t0


def actors(s: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """Start-up and per-call cost of party actors vs bare Ray actors, and worker memory.

    Bare and party start-ups alternate, ``actor_rounds`` times each, on one Ray
    instance; before each start the workers of the previous one have exited. The
    start ratio is the median of the rounds' ratios; every round is kept.
    """
    import ray

    from ppknn.core.runtime import RunContext, make_runtime
    from ppknn.simulations.runner import prepare
    from ppknn.simulations.scenario import parse_scenario

    n, calls = s["actor_parties"], s["calls"]
    sc = parse_scenario({"data": {"dataset": "abalone", "max_queries": 10},
                         "parties": {"n": n}, "protocol": {"name": "ppknn-ring"},
                         "runtime": {"kind": "ray", "layout": "actor-per-party"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = prepare(sc)
    specs = [spec for p in planned.protocols for spec in p.plan.specs]
    ray.init(address="local", include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    rounds: list[dict[str, float]] = []
    try:
        remote = ray.remote(num_cpus=0)(_Bare)
        for r in range(s["actor_rounds"]):
            t0 = time.perf_counter()
            bare = [remote.remote() for _ in range(n)]
            ray.get([a.ping.remote() for a in bare])
            bare_start = time.perf_counter() - t0
            if r == 0:
                bare_mem = _mean_memory(_ray_pids("ray::_Bare"))
                one = bare[0]
                ray.get(one.ping.remote())
                t0 = time.perf_counter()
                for _ in range(calls):
                    ray.get(one.ping.remote())
                bare_call = (time.perf_counter() - t0) / calls
                del one
            for a in bare:
                ray.kill(a)
            del bare
            settled = _settle(("ray::_Bare",))

            rt = make_runtime("ray", layout="actor-per-party")
            t0 = time.perf_counter()
            rt.start(specs, RunContext(run_id="bench-actors"))
            party_start = time.perf_counter() - t0
            if r == 0:
                party_mem = _mean_memory(rt.host_pids())  # this run's hosts only
                name = specs[0].party_id
                rt.state(name, "party_id")
                t0 = time.perf_counter()
                for _ in range(calls):
                    rt.state(name, "party_id")
                party_call = (time.perf_counter() - t0) / calls
            rt.shutdown()
            settled += _settle(("ray::PartyHost", "ray::TranscriptRecorder"))
            rounds.append({"bare_start_s": bare_start, "party_start_s": party_start,
                           "start_ratio": party_start / bare_start, "settle_s": settled})
            log(f"  round {r + 1}: {n} bare actors start {bare_start:.1f} s, {n} party actors "
                f"{party_start:.1f} s: {party_start / bare_start:.2f}x")
        log(f"  call: bare {bare_call * 1e3:.2f} ms, party {party_call * 1e3:.2f} ms")
    finally:
        ray.shutdown()
    bare_start = statistics.median(x["bare_start_s"] for x in rounds)
    party_start = statistics.median(x["party_start_s"] for x in rounds)
    out = {"parties": n, "bare_start_s": bare_start, "party_start_s": party_start,
           "start_ratio": statistics.median(x["start_ratio"] for x in rounds),
           "start_ratio_range": [min(x["start_ratio"] for x in rounds),
                                 max(x["start_ratio"] for x in rounds)],
           "start_rounds": rounds, "bare_call_ms": bare_call * 1e3,
           "party_call_ms": party_call * 1e3, "call_ratio": party_call / bare_call,
           **{f"bare_worker_{k}_mib": v for k, v in bare_mem.items()},
           **{f"party_worker_{k}_mib": v for k, v in party_mem.items()}}
    # what one more party costs is its private memory plus its share of the pages it shares
    # with the other workers (PSS); RSS counts every shared library again in every worker
    for k in ("rss", "pss", "uss"):
        if out[f"party_worker_{k}_mib"]:
            out[f"parties_per_24gib_by_{k}"] = int(24 * 1024 / out[f"party_worker_{k}_mib"])
    out["parties_per_24gib"] = out.get("parties_per_24gib_by_pss")
    log(f"  worker memory (MiB, mean): bare rss/pss/uss "
        f"{_fmt(bare_mem)}; party {_fmt(party_mem)}; "
        f"{out['parties_per_24gib']} parties per 24 GiB by PSS")
    return out


def _fmt(mem: dict[str, float | None]) -> str:
    return "/".join("-" if mem[k] is None else f"{mem[k]:.0f}" for k in ("rss", "pss", "uss"))


def _run_inprocess(data: dict[str, Any]) -> tuple[Any, Any]:
    from ppknn.simulations.prepare import prepare_data
    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario

    sc = parse_scenario({**data, "runtime": {"kind": "inprocess", "channels": True}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return execute(sc), prepare_data(sc)


def _ppknn_floors(result: Any, prepared: Any, repeats: int, k: int) -> dict[str, Any]:
    """What any PP-kNN run with these results pays, timed alone (the floor under item 3).

    Four parts, none of which a run with channels on and the same transcript can skip:

    * distances: every (query, row) pair computed pair by pair (``cdist``), as the owners
      must so that all of them agree to the bit (one call over the union: the owners'
      64 calls cost more);
    * local selection: each owner's k smallest distances per query (its ``V``), read off
      its own distances by a partial selection;
    * key agreements: a key pair per party, and for every pair of parties that exchanged
      a message an X25519 exchange, HKDF-SHA256 and the AES-GCM key set-up at each end;
    * sealing: one AEAD seal and one open of every payload the run recorded (the bytes
      the transcript holds, so the same size), each freed at once (a warm allocator: a
      run, whose payloads live longer, pays more).

    Each is the median of ``repeats`` samples (one sample right after the runs can take
    three times as long).
    """
    import os

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    from ppknn.protocols.ppknn_ring.pp_topk import euclidean_distances, local_topk

    table = result.transcript.table(["payload", "sender", "receiver"])
    payloads = table.column("payload").to_pylist()
    pairs = sorted({tuple(sorted(p)) for p in zip(table.column("sender").to_pylist(),
                                                  table.column("receiver").to_pylist())})
    parties = sorted({p for pair in pairs for p in pair})
    cipher, nonce = AESGCM(os.urandom(32)), os.urandom(12)

    def channels() -> None:
        for p in payloads:
            cipher.decrypt(nonce, cipher.encrypt(nonce, p, b"header"), b"header")

    def agreements() -> None:
        keys = {p: X25519PrivateKey.generate() for p in parties}
        public = {p: key.public_key().public_bytes_raw() for p, key in keys.items()}
        for a, b in pairs:
            info = f"ppknn-channel|bench|{a}|{b}".encode()
            for me, peer in ((a, b), (b, a)):
                shared = keys[me].exchange(X25519PublicKey.from_public_bytes(public[peer]))
                AESGCM(HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                            info=info).derive(shared))

    blocks = [euclidean_distances(prepared.queries, prepared.owner_X(i))
              for i in range(len(prepared.owner_rows))]
    _, distances = _median(lambda: euclidean_distances(prepared.queries, prepared.union_X),
                           repeats)
    _, selection = _median(lambda: [local_topk(b, k) for b in blocks], repeats)
    _, agreeing = _median(agreements, repeats)
    _, sealing = _median(channels, repeats)
    return {"floor_distances_s": distances, "floor_selection_s": selection,
            "floor_key_agreements_s": agreeing, "floor_channels_s": sealing,
            "floor_s": distances + selection + agreeing + sealing,
            "floor_messages": len(payloads), "floor_pairs": len(pairs),
            "floor_message_mb": sum(len(p) for p in payloads) / 1e6}


def ppknn_compute(s: dict[str, Any], log: Callable[[str], None]) -> list[dict[str, Any]]:
    """In-process PP-kNN cold (start-up + first run) vs scikit-learn brute kNN."""
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    from ppknn.protocols.ppknn_ring import pp_topk

    # which PP-TopK step ran: compiled (_topk_kernel.c, built at install) or numpy
    step_kind = "compiled" if pp_topk._kernel is not None else "numpy"
    log(f"  PP-TopK step: {step_kind}")
    rows = []
    for n in s["ppknn_parties"]:
        data = {"data": {"dataset": "abalone", "test_fraction": 0.25,
                         "max_queries": s["ppknn_queries"]},
                "parties": {"n": n}, "protocol": {"name": "ppknn-ring", "k": 5}}
        # each cold sample is a fresh run: new parties (keys, channels, distances), start-up
        # and first run timed; the median of `repeats` samples, every sample kept
        samples = []
        for _ in range(s["repeats"]):
            result, prepared = _run_inprocess(data)
            t = result.timings
            samples.append((t["startup_s"] + t["protocol_s"], t["startup_s"], t["protocol_s"]))
        cold, startup, first_run = (statistics.median(x) for x in zip(*samples))
        with threadpool_limits(limits=1):
            sk_first, sk_med = _median(lambda p=prepared: KNeighborsClassifier(
                n_neighbors=5, algorithm="brute").fit(p.union_X, p.union_y).predict(p.queries),
                s["repeats"])
        floors = _ppknn_floors(result, prepared, s["repeats"], k=5)
        colds = sorted(c for c, _, _ in samples)
        rows.append({"parties": n, "queries": len(prepared.queries), "topk_step": step_kind,
                     "startup_s": startup,
                     "first_run_s": first_run, "cold_s": cold, "cold_samples_s": colds,
                     "sklearn_first_s": sk_first, "sklearn_median_s": sk_med,
                     "cold_over_sklearn": cold / sk_first,
                     "cold_over_sklearn_range": [colds[0] / sk_first, colds[-1] / sk_first],
                     **floors, **{f"{k[:-2]}_over_sklearn": v / sk_first
                                  for k, v in floors.items() if k.endswith("_s")}})
        log(f"  PP-kNN n={n}: cold {cold:.3f} s (median of {len(colds)} fresh runs, "
            f"{colds[0]:.3f}-{colds[-1]:.3f}) vs scikit-learn {sk_first:.3f} s "
            f"({cold / sk_first:.2f}x); of which no run can skip "
            f"{floors['floor_s'] * 1e3:.1f} ms ({floors['floor_s'] / sk_first:.2f}x): "
            f"pair-by-pair distances {floors['floor_distances_s'] * 1e3:.1f} ms, the owners' "
            f"local top-k {floors['floor_selection_s'] * 1e3:.1f} ms, "
            f"{2 * floors['floor_pairs']} key agreements "
            f"{floors['floor_key_agreements_s'] * 1e3:.1f} ms, sealing and opening "
            f"{floors['floor_messages']} messages ({floors['floor_message_mb']:.1f} MB) "
            f"{floors['floor_channels_s'] * 1e3:.1f} ms")
    return rows


def dp_owner(s: dict[str, Any], log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Interactive DP k-NN and DP r-N answers vs scikit-learn on the same queries."""
    from sklearn.neighbors import KNeighborsClassifier, RadiusNeighborsClassifier
    from threadpoolctl import threadpool_limits

    rows = []
    for task, proto in (("knn", {"task": "knn", "k": 30}), ("rn", {"task": "rn"})):
        data = {"data": {"dataset": "phoneme", "test_fraction": 0.25, "scale": "minmax",
                         "max_queries": s["dp_queries"]},
                "protocol": {"name": "dp-knn", "epsilon": 1.0, **proto}}
        result, p = _run_inprocess(data)
        t = result.timings
        radius = getattr(result.outcomes[0].config, "radius", 0.1)
        if task == "knn":
            def base(p=p):
                return KNeighborsClassifier(n_neighbors=30, algorithm="brute").fit(
                    p.union_X, p.union_y).predict(p.queries)
        else:
            def base(p=p, r=radius):
                return RadiusNeighborsClassifier(radius=r, algorithm="brute", outlier_label=0
                                                 ).fit(p.union_X, p.union_y).predict(p.queries)
        with threadpool_limits(limits=1):
            sk_first, sk_med = _median(base, s["repeats"])
        cold = t["startup_s"] + t["protocol_s"]
        rows.append({"task": task, "queries": len(p.queries), "startup_s": t["startup_s"],
                     "protocol_s": t["protocol_s"], "cold_s": cold, "sklearn_first_s": sk_first,
                     "sklearn_median_s": sk_med, "cold_over_sklearn": cold / sk_first})
        log(f"  DP owner {task}: cold {cold:.2f} s vs scikit-learn {sk_first:.3f} s "
            f"({cold / sk_first:.1f}x)")
    return rows


def scale(s: dict[str, Any], tmp: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Hosted layout with many logical parties: start-up, protocol time, peak memory."""
    rows = []
    for n in s["scale_parties"] or ():
        folder = tmp / f"scale-{n}"
        sc = _scenario(tmp / f"scale-{n}.toml", n=n, queries=200, kind="ray", layout="hosted",
                       dataset=f"synthetic:classification?rows={2 * n + 400}&features=8"
                               "&classes=3", output=folder)
        run = _run_tree_peak([sys.executable, "-m", "ppknn", "run", str(sc)])
        timings = json.loads((folder / "summary.json").read_text())["timings_s"]
        # the leakage table: its ground truth, saved as soon as the protocols complete
        # (with the public facts), and the scoring
        timings["leakage_s"] = timings.get("leakage_s", 0.0) + timings.pop("recorded_s", 0.0)
        # the rest of the wall time: the process's imports, data preparation, writing the
        # results (CSV, JSON, plots) and Ray's shutdown
        other = run["wall_s"] - sum(timings.get(k, 0.0) for k in
                                    ("startup_s", "protocol_s", "measure_s", "leakage_s"))
        rows.append({"parties": n, "queries": 200, "wall_s": run["wall_s"], **timings,
                     "other_s": other, "peak_rss_mib": run["peak_rss_mib"],
                     "peak_pss_mib": run["peak_pss_mib"],
                     "pending_task_warning": "pending submission" in run["stderr"]})
        nan = float("nan")
        log(f"  hosted n={n}: {run['wall_s']:.1f} s end to end: start-up "
            f"{timings.get('startup_s', nan):.1f} s, protocol {timings.get('protocol_s', nan):.1f}"
            f" s, measure {timings.get('measure_s', nan):.1f} s, leakage table "
            f"{timings.get('leakage_s', nan):.1f} s, the rest {other:.1f} s; peak memory of the "
            f"run's processes {run['peak_pss_mib']:.0f} MiB PSS / {run['peak_rss_mib']:.0f} MiB "
            "RSS" + (", pending-task warning" if rows[-1]["pending_task_warning"] else ""))
    return rows


# --------------------------------------------------------------------------- output
def _wrap(layout: str) -> str:
    """A layout's name for a bar label: ``actor-per-party`` on two lines."""
    return layout.replace("-per-", "-per-\n")


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars: list[tuple[str, float, float | None]] = []  # label, measured ratio, target
    e2e = result["end_to_end"]
    for layout in result["settings"]["e2e_layouts"]:
        bars.append((f"run ray-{_wrap(layout)}\n(−bare)\n/inproc",
                     e2e[f"ray-{layout}_minus_bare_over_inprocess"],
                     1.15 if layout == "hosted" else None))
        bars.append((f"run ray-{_wrap(layout)}\n(−bare+actors)\n/inproc",
                     e2e[f"ray-{layout}_minus_bare_actors_over_inprocess"], None))
        if f"ray-{layout}_minus_bare_quick_stop_over_inprocess" in e2e:
            bars.append((f"run ray-{_wrap(layout)}\n(−bare, same stop)\n/inproc",
                         e2e[f"ray-{layout}_minus_bare_quick_stop_over_inprocess"], None))
    a = result["actors"]
    bars += [("actor start\n/bare", a["start_ratio"], 1.3),
             ("actor call\n/bare", a["call_ratio"], 1.5)]
    for r in result["ppknn"]:
        bars.append((f"PP-kNN n={r['parties']}\ncold/sklearn", r["cold_over_sklearn"],
                     1.5 if r["parties"] == 64 else None))
    for r in result["dp_owner"]:
        bars.append((f"DP {r['task']}\n/sklearn", r["cold_over_sklearn"],
                     5.0 if r["task"] == "knn" else None))
    fig, ax = plt.subplots(figsize=(max(6, 1.35 * len(bars)), 4.8))
    xs = range(len(bars))
    ax.bar(xs, [b[1] for b in bars], color="tab:blue", label="measured ratio")
    targets = [(x, b[2]) for x, b in zip(xs, bars) if b[2] is not None]
    ax.scatter([x for x, _ in targets], [t for _, t in targets], marker="_", s=600,
               color="tab:red", label="target")
    first = len(bars) - len(result.get("dp_owner", ())) - len(result.get("ppknn", ()))
    floors = [(first + i, r["floor_over_sklearn"])
              for i, r in enumerate(result.get("ppknn", ())) if "floor_over_sklearn" in r]
    if floors:
        ax.scatter([x for x, _ in floors], [f for _, f in floors], marker="_", s=600,
                   color="black", label="PP-kNN floor: distances, selection, keys, sealing")
    ax.set_xticks(list(xs), [b[0] for b in bars], fontsize=7)
    ax.set_ylabel("ratio (lower is better)")
    ax.set_yscale("log")
    ax.set_title(f"ppknn benchmarks ({result['mode']}, {result['machine']['cpus']} CPUs)")
    # below the tick labels, never over a bar
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, path, dpi=90)  # 13 bars: wide enough at 90 dpi
    plt.close(fig)


SCALE_PHASES = (("startup_s", "start-up"), ("protocol_s", "protocol"),
                ("measure_s", "measure"), ("leakage_s", "leakage table"),
                ("other_s", "the rest (imports, data, files, shut-down)"))


def _plot_scale(result: dict[str, Any], path: Path) -> None:
    """``scale.png``: each size's ``ppknn run`` wall time, stacked by phase."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["scale"]
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = range(len(rows))
    bottom = [0.0] * len(rows)
    for key, label in SCALE_PHASES:
        heights = [max(float(r.get(key, 0.0)), 0.0) for r in rows]
        ax.bar(xs, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(list(xs), [f"{r['parties']:,} parties\n{r['queries']} queries" for r in rows])
    ax.set_ylabel("wall time of ppknn run (s)")
    ax.set_title(f"ppknn run, hosted layout, by phase ({result['machine']['cpus']} CPUs)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run the suite; print the table; write ``bench.json`` and ``bench.png``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a minute or two)")
    ap.add_argument("--output", default="results/bench", help="folder for bench.json/png")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing folder")
    ap.add_argument("--no-compile", action="store_true",
                    help="leave framework modules without cached bytecode as they are "
                         "(default: compile them once, as a first import does)")
    ap.add_argument("--only", nargs="+",
                    choices=["e2e", "actors", "ppknn", "dp", "scale", "peers"],
                    help="run only these cases (peers: MPyC and Flower, when installed)")
    args = ap.parse_args(argv)
    out = Path(args.output)
    if out.exists() and not args.overwrite:
        print(f"error: {out} exists; pass --overwrite to replace it", file=sys.stderr)
        return 2
    s = QUICK if args.quick else FULL
    only = set(args.only or ["e2e", "actors", "ppknn", "dp", "scale", "peers"])

    def log(msg: str) -> None:
        print(msg, flush=True)

    result: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in s.items()},
        "bytecode": _bytecode(not args.no_compile, log),
    }
    with tempfile.TemporaryDirectory(prefix="ppknn-bench-") as t:
        tmp = Path(t)
        if "e2e" in only:
            log("end to end (fresh processes):")
            result["end_to_end"] = end_to_end(s, tmp, log)
        if "actors" in only:
            log("actors:")
            result["actors"] = actors(s, log)
        if "ppknn" in only:
            log("party-side compute:")
            result["ppknn"] = ppknn_compute(s, log)
        if "dp" in only:
            log("DP owner:")
            result["dp_owner"] = dp_owner(s, log)
        if "scale" in only and s["scale_parties"]:
            log("scale (hosted):")
            result["scale"] = scale(s, tmp, log)
    if "peers" in only:  # optional: skipped with a message when the peers are not installed
        from benchmarks import bench_peers

        log("peers (MPyC secure kNN, Flower simulation; benchmarks/bench_peers.py):")
        peers = bench_peers.section(args.quick, log)
        if peers is not None:
            result["peers"] = peers
            log(bench_peers.table(peers))
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "bench.json").write_text(json.dumps(result, indent=1, default=str))
    if only >= {"e2e", "actors", "ppknn", "dp"}:
        _plot(result, staging / "bench.png")
    if result.get("scale"):
        _plot_scale(result, staging / "scale.png")
    if result.get("peers"):
        from benchmarks import bench_peers

        bench_peers.write(result["peers"], staging)  # peers.csv, peers.json, peers.png
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    log(f"wrote {out}/bench.json" + "".join(f" and {f}" for f in ("bench.png", "scale.png",
                                                               "peers.png")
                                             if (out / f).exists()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
