"""The peers side by side: MPyC secure kNN and a Flower simulation beside ppknn's ring.

``python -m benchmarks.bench_peers [--quick] [--output DIR] [--install]``

Two comparisons, every figure measured in this one run on this machine:

* **MPyC secure kNN vs the ring** (abalone, the ring's own split: the same owners' rows and
  the same queries, k = 5). Each MPyC party computes its k smallest distances to every
  query in the clear, then MPyC (Shamir secret sharing, honest majority, passive security)
  merges the parties' sorted lists securely to the global k smallest (a tree of bitonic
  splits, each followed by a Batcher sort, vectorised over the queries) and takes the
  majority vote (pairwise label equality, argmax; the smallest label wins a tie), and only
  the predicted label is opened. The parties run as separate processes talking TCP over
  loopback (MPyC's ``-M n``), the honest multi-party form, with MPyC's ``--no-prss``
  (``--mpyc-prss`` for its default pseudorandom secret sharing, whose cost per random value
  grows as C(n, t)) and the queries in secure batches of 400 / n (:func:`mpyc_batch`).
  Distances enter as 20-bit fixed
  point (resolution diameter / 2^20) in 24-bit secure integers. Recorded: the end-to-end
  wall time of a fresh start (cold: interpreters, imports, connecting the parties, the
  local part, the secure part, shut-down), the start-up until all parties are connected,
  the secure part alone (warm: parties up and connected), the bytes all parties sent (MPyC's
  own counters: payload + 12-byte header per message), the largest party's peak memory,
  accuracy and agreement with plain
  kNN on the union. Beside it ppknn's ``ppknn-ring`` (defaults: P0 = 1, d = 0.5,
  rounds = 2, channels on), in-process and on Ray with the hosted layout, each in a fresh
  process: a cold run (start-up, including Ray's start, and the first run), then a warm
  run in the same process; protocol time, measure and leakage scoring, wire bytes,
  accuracy, agreement with the same plain kNN, and the per-node disclosure the run's
  leakage table measured (successor attribution: mean over nodes and the worst node).
  MPyC's disclosure is 0 by construction (only the predictions are opened). A case whose
  MPyC run exceeds ``--mpyc-timeout`` is stopped and marked in the table.
* **Flower vs the hosted ring, end to end**: a Flower simulation (Ray backend, one
  trivial round of FedAvg over a one-element array with every virtual client training)
  with N clients, in a fresh process, beside ``ppknn run`` with N parties (hosted layout
  on Ray, abalone, 100 queries) in a fresh process: wall time, and the phases each
  reports (Flower: imports, simulation; ppknn: start-up, protocol, measure, leakage).

The peers never enter ppknn's dependencies (Flower pins its own Ray, protobuf, rich and
typer): they live in a separate virtual environment, ``~/.cache/ppknn/peers-venv``
(``PPKNN_PEERS_VENV`` overrides), made with ``--install`` (``pip install mpyc
flwr[simulation]``). Without it the section says so and is skipped. Writes
``peers.csv``, ``peers.json`` and ``peers.png`` into ``--output``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ppknn_reproductions.experiments import peer_env

VENV = Path(os.environ.get("PPKNN_PEERS_VENV", Path.home() / ".cache" / "ppknn" / "peers-venv"))
REQUIREMENTS = ("mpyc", "flwr[simulation]")
K = 5

QUICK = {"mpyc_parties": (4,), "mpyc_queries": (20,), "ring_kinds": ("inprocess",),
         "flower_clients": (8,), "repeats": 1, "small_queries": 100}
FULL = {"mpyc_parties": (4, 8, 16), "mpyc_queries": (100, 1000),
        "ring_kinds": ("inprocess", "ray"), "flower_clients": (64, 1000), "repeats": 2,
        "small_queries": 100}

# --------------------------------------------------------------------------- MPyC party
MPYC_SCRIPT = r'''
import json, os, resource, sys, time
T_PROCESS = time.time()
import numpy as np
from mpyc.runtime import mpc

job = json.load(open(os.environ["PPKNN_MPYC_JOB"]))
K, BITS, SCALE = job["k"], job["bits"], job["scale"]


def merge(a, b):
    """Top k of two sorted (rows, 2, k) lists [distance; label]: bitonic split, then sort."""
    r = b[:, :, ::-1]
    c = r[:, 0, :] < a[:, 0, :]
    low = a + c[:, None, :] * (r - a)
    return low


def sort(a):
    return mpc.np_sort(a, axis=-1, key=lambda t: t[..., 0:1, :])


async def secure_knn(secint, own):
    """The predicted labels of a batch: merge the parties' lists securely, vote, open."""
    lists = mpc.input(secint.array(own))
    q = own.shape[0]
    while len(lists) > 1:
        a, b = lists[0:len(lists) - 1:2], lists[1::2]
        rest = lists[len(a) + len(b):]
        merged = merge(mpc.np_vstack(a), mpc.np_vstack(b))
        if len(a) > 1 or rest:  # the next level needs sorted lists
            merged = sort(merged)
        lists = [merged[i * q:(i + 1) * q] for i in range(len(a))] + rest
    labels = lists[0][:, 1, :]
    i, j = np.triu_indices(K, 1)
    same = labels[:, i] == labels[:, j]
    votes = []
    for m in range(K):
        col = [p for p in range(len(i)) if i[p] == m or j[p] == m]
        cols = [same[:, p] for p in col]
        votes.append(sum(cols[1:], cols[0]))
    score = mpc.np_stack(votes, axis=1)
    top = int(job["classes"]) + 1
    keyed = score * top + (top - 1 - labels)
    unit = mpc.np_argmax(keyed, axis=1, arg_unary=True)
    pred = mpc.np_sum(unit * labels, axis=1)
    return await mpc.output(pred)


async def main():
    pid = mpc.pid
    data = np.load(job["npz"])
    X, y, Q = data[f"X{pid}"], data[f"y{pid}"], data["Q"]
    t0 = time.perf_counter()
    # in the clear, at this party: distances to its rows, its k smallest, sorted
    d = np.sqrt(np.maximum((Q * Q).sum(1)[:, None] - 2 * Q @ X.T + (X * X).sum(1)[None], 0))
    if d.shape[1] < K:  # fewer rows than k: pad with the public maximum distance
        pad = K - d.shape[1]
        d = np.hstack([d, np.full((len(Q), pad), job["diameter"])])
        y = np.concatenate([y, np.zeros(pad, dtype=y.dtype)])
    idx = np.argpartition(d, K - 1, axis=1)[:, :K]
    dk = np.take_along_axis(d, idx, 1)
    order = np.argsort(dk, axis=1, kind="stable")
    dk = np.take_along_axis(dk, order, 1)
    lk = y[np.take_along_axis(idx, order, 1)]
    own = np.stack([np.minimum(np.floor(dk * SCALE), 2 ** 20).astype(np.int64),
                    lk.astype(np.int64)], axis=1)  # (queries, 2, k)
    local_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    await mpc.start()
    connected = time.time()
    connect_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    secint = mpc.SecInt(BITS)
    out = []
    for lo in range(0, own.shape[0], job["batch"]):  # batches bound each party's memory
        out += list(await secure_knn(secint, own[lo:lo + job["batch"]]))
    secure_s = time.perf_counter() - t0
    sent = sum(p.protocol.nbytes_sent for p in mpc.parties if p.pid != pid)
    report = {"pid": pid, "process_start": T_PROCESS, "connected": connected,
              "local_s": local_s, "connect_s": connect_s, "secure_s": secure_s, "sent": sent,
              "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    if pid == 0:
        report["predictions"] = np.asarray(out, dtype=np.int64).tolist()
    with open(os.path.join(job["out"], f"party{pid}.json"), "w") as f:
        json.dump(report, f)
    await mpc.shutdown()

mpc.run(main())
'''

# --------------------------------------------------------------------------- Flower
FLOWER_SCRIPT = r'''
import json, sys, time, logging
t0 = time.perf_counter()
import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from flwr.simulation import run_simulation
import_s = time.perf_counter() - t0
N = int(sys.argv[1])
client = ClientApp()


@client.train()
def train(msg: Message, context: Context) -> Message:
    content = RecordDict({"arrays": msg.content["arrays"],
                          "metrics": MetricRecord({"num-examples": 1})})
    return Message(content=content, reply_to=msg)


server = ServerApp()
answered = {}


@server.main()
def main(grid: Grid, context: Context) -> None:
    t = time.perf_counter()
    strategy = FedAvg(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=N,
                      min_available_nodes=N)
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord([np.zeros(1)]),
                            num_rounds=1)
    answered["round_s"] = time.perf_counter() - t
    answered["rounds"] = len(result.train_metrics_clientapp)


t = time.perf_counter()
run_simulation(server_app=server, client_app=client, num_supernodes=N,
               backend_config={"client_resources": {"num_cpus": 1}})
sim_s = time.perf_counter() - t
print(json.dumps({"import_s": import_s, "simulation_s": sim_s, **answered}))
'''

# --------------------------------------------------------------------------- ppknn's ring
RING_SCRIPT = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import numpy as np
import ppknn
job = json.loads(sys.argv[1])
out = {"import_s": time.perf_counter() - t0, "runs": []}
if job["kind"] == "ray":
    from ppknn.core.runtime.ray_runtime import init_keeping_sigterm
    t = time.perf_counter()
    init_keeping_sigterm(address="local", include_dashboard=False, logging_level="WARNING",
                         log_to_driver=False)
    out["ray_init_s"] = time.perf_counter() - t
for label in ("cold", "warm"):
    t = time.perf_counter()
    r = ppknn.run(job["scenario"])
    run_s = time.perf_counter() - t
    t = time.perf_counter()
    s = r.summary
    leak_s = time.perf_counter() - t
    attribution = [a for a in s["leakage"]["by_attack"] if a["attack"] == "successor-attribution"]
    o = r.run.outcomes[0]
    out["runs"].append({
        "label": label, "run_s": run_s, "leakage_s": leak_s, **s["timings_s"],
        "bytes": s["communication"]["bytes"], "messages": s["communication"]["messages"],
        "accuracy": s["accuracy"], "disclosure_mean": s["disclosure_mean"],
        "disclosure_max": attribution[0]["max"] if attribution else None,
        "predictions": np.asarray(o.predictions).tolist()})
print("RESULT " + json.dumps(out))
'''


# --------------------------------------------------------------------------- environment
def ensure_venv(*, create: bool, venv: Path = VENV) -> tuple[Path | None, str]:
    """``(python of the peers' venv, message)``; creates it when asked and missing."""
    python, _, message = peer_env.ensure(
        venv, REQUIREMENTS, ("mpyc", "flwr", "ray", "numpy"), create=create,
        what="the peers (mpyc, flwr[simulation])", how="python -m benchmarks.bench_peers --install")
    return python, message


# --------------------------------------------------------------------------- the split
def _ring_scenario(n: int, queries: int, kind: str) -> dict[str, Any]:
    return {"run": {"seed": 1},
            "data": {"dataset": "abalone", "test_fraction": 0.25, "max_queries": queries},
            "parties": {"n": n}, "protocol": {"name": "ppknn-ring", "k": K},
            "runtime": {"kind": kind, "channels": True,
                        **({"layout": "hosted"} if kind == "ray" else {})}}


def _split(n: int, queries: int, folder: Path) -> dict[str, Any]:
    """The ring's split written for the MPyC parties, and plain kNN's answers on it."""
    import warnings

    from ppknn.simulations.prepare import prepare_data
    from ppknn.simulations.scenario import parse_scenario

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = prepare_data(parse_scenario(_ring_scenario(n, queries, "inprocess")))
    arrays = {"Q": p.queries}
    for i in range(len(p.owner_rows)):
        arrays[f"X{i}"], arrays[f"y{i}"] = p.owner_X(i), p.owner_y(i).astype(np.int64)
    npz = folder / f"split-{n}-{queries}.npz"
    np.savez(npz, **arrays)
    # plain kNN on the union: k smallest distances, majority, the smallest label on a tie
    X, y = p.union_X, p.union_y.astype(np.int64)
    d = np.sqrt(np.maximum((p.queries ** 2).sum(1)[:, None] - 2 * p.queries @ X.T
                           + (X ** 2).sum(1)[None], 0))
    nearest = np.argsort(d, axis=1, kind="stable")[:, :K]
    counts = np.zeros((len(p.queries), p.n_classes), dtype=np.int64)
    np.add.at(counts, (np.arange(len(p.queries))[:, None], y[nearest]), 1)
    return {"npz": npz, "knn": counts.argmax(1), "labels": np.asarray(p.query_labels),
            "diameter": float(p.bounds.diameter), "classes": int(p.n_classes)}


def _agree(pred: Any, ref: np.ndarray) -> float:
    return float(np.mean(np.asarray(pred) == ref))


# --------------------------------------------------------------------------- runners
def _free_port_base(n: int) -> int:
    """A base port with ``n`` consecutive free loopback ports (MPyC uses base + i)."""
    rng = np.random.default_rng()
    for _ in range(50):
        base = int(rng.integers(20_000, 60_000 - n))
        try:
            socks = []
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free loopback ports for the MPyC parties")


def _run_group(cmd: list[str], env: dict[str, str], timeout: float | None
               ) -> tuple[int | None, str, str, float]:
    """Run ``cmd`` in its own process group; on timeout stop that group (its processes only)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err, time.perf_counter() - t0
    except BaseException:  # interrupted (Ctrl-C, SIGTERM via main): leave no party behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def mpyc_batch(n: int) -> int:
    """Queries per secure batch at ``n`` parties: a party's memory grows with batch x n (at
    n = 16, 100 queries in one batch took 1.8 GB a party and 16 of them ran this 23 GB
    machine out of memory), so the batch shrinks as n grows: 100 at n = 4, 50 at 8, 25 at 16."""
    return max(1, 400 // n)


def mpyc_case(python: Path, split: dict[str, Any], n: int, folder: Path,
              timeout: float, *, prss: bool = False) -> dict[str, Any]:
    """One MPyC secure-kNN run, ``n`` party processes on loopback.

    ``prss=False`` passes MPyC's ``--no-prss``: its random sharings then come from t + 1
    parties' inputs instead of pseudorandom secret sharing, whose cost per random value
    grows as C(n, t) (4 at n = 4, 56 at n = 8, 11,440 at n = 16).
    """
    out = folder / f"mpyc-{n}-{len(split['labels'])}-{time.monotonic_ns()}"
    out.mkdir()
    script = folder / "mpyc_knn.py"
    script.write_text(MPYC_SCRIPT)
    job = folder / f"{out.name}.json"
    job.write_text(json.dumps({"npz": str(split["npz"]), "out": str(out), "k": K, "bits": 24,
                               "batch": mpyc_batch(n),
                               "scale": (2 ** 20 - 1) / split["diameter"],
                               "diameter": split["diameter"], "classes": split["classes"]}))
    env = {**os.environ, "PPKNN_MPYC_JOB": str(job)}
    cmd = [str(python), str(script), "-M", str(n), "-B", str(_free_port_base(n)), "--no-log",
           *(() if prss else ("--no-prss",))]
    launched = time.time()
    code, stdout, stderr, wall = _run_group(cmd, env, timeout)
    row: dict[str, Any] = {"system": "MPyC", "form": f"{n} processes, loopback TCP"
                           + ("" if prss else ", --no-prss"),
                           "parties": n, "queries": len(split["labels"])}
    if code is None:
        return {**row, "timed_out": True, "cold_s": wall,
                "note": f"stopped after {timeout:.0f} s"}
    reports = [json.loads((out / f"party{i}.json").read_text())
               for i in range(n) if (out / f"party{i}.json").exists()]
    if code != 0 or len(reports) != n:
        raise RuntimeError(f"MPyC failed ({code}): {stderr[-1500:]}")
    zero = next(r for r in reports if r["pid"] == 0)
    pred = np.asarray(zero["predictions"])
    return {**row, "timed_out": False, "cold_s": wall,
            "startup_s": max(r["connected"] for r in reports) - launched,
            "local_s": max(r["local_s"] for r in reports),
            "protocol_s": max(r["secure_s"] for r in reports),
            "bytes": sum(r["sent"] for r in reports),
            "party_peak_mb": max(r["peak_kb"] for r in reports) / 1024,
            "batch": mpyc_batch(n),
            "accuracy": _agree(pred, split["labels"]), "agreement_knn": _agree(pred, split["knn"]),
            "disclosure_mean": 0.0, "disclosure_max": 0.0}


def ring_case(split: dict[str, Any], n: int, queries: int, kind: str) -> dict[str, Any]:
    """ppknn's ring in a fresh process: a cold run, then a warm one in the same process."""
    cmd = [sys.executable, "-c", RING_SCRIPT, json.dumps({
        "kind": kind, "scenario": _ring_scenario(n, queries, kind)})]
    code, stdout, stderr, wall = _run_group(cmd, dict(os.environ), 1800)
    lines = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
    if code != 0 or not lines:
        raise RuntimeError(f"ppknn ring failed ({code}): {stderr[-1500:]}")
    res = json.loads(lines[-1][len("RESULT "):])
    cold, warm = res["runs"]
    ray_init = res.get("ray_init_s", 0.0)
    pred = np.asarray(cold["predictions"])
    return {"system": "ppknn ring", "form": "in-process" if kind == "inprocess" else
            "Ray, hosted layout", "parties": n, "queries": queries, "timed_out": False,
            # cold: a fresh process until the first run's leakage is scored
            "cold_s": res["import_s"] + ray_init + cold["run_s"] + cold["leakage_s"],
            "process_s": wall, "startup_s": ray_init + cold["startup_s"],
            "protocol_s": cold["protocol_s"], "warm_protocol_s": warm["protocol_s"],
            "warm_s": warm["run_s"] + warm["leakage_s"],
            "measure_s": cold.get("measure_s", 0.0), "leakage_s": cold["leakage_s"],
            "bytes": cold["bytes"], "accuracy": _agree(pred, split["labels"]),
            "agreement_knn": _agree(pred, split["knn"]),
            "disclosure_mean": cold["disclosure_mean"], "disclosure_max": cold["disclosure_max"]}


def flower_case(python: Path, n: int) -> dict[str, Any]:
    """A Flower simulation (Ray backend) with ``n`` virtual clients and one trivial round."""
    code, stdout, stderr, wall = _run_group([str(python), "-c", FLOWER_SCRIPT, str(n)],
                                            dict(os.environ), 1800)
    lines = [x for x in stdout.splitlines() if x.startswith("{")]
    if code != 0 or not lines:
        raise RuntimeError(f"Flower failed ({code}): {stderr[-1500:]}")
    res = json.loads(lines[-1])
    return {"system": "Flower", "form": "simulation, Ray backend", "parties": n,
            "cold_s": wall, "import_s": res["import_s"], "simulation_s": res["simulation_s"],
            "round_s": res.get("round_s"), "startup_s": res["simulation_s"] - res.get(
                "round_s", 0.0), "protocol_s": res.get("round_s")}


def ring_e2e_case(n: int, folder: Path) -> dict[str, Any]:
    """``ppknn run`` with ``n`` parties, hosted layout on Ray, in a fresh process."""
    out = folder / f"e2e-{n}-{time.monotonic_ns()}"
    sc = folder / f"e2e-{n}.toml"
    sc.write_text(f'[run]\nname = "peers"\nseed = 1\noutput = "{out}"\n\n'
                  '[data]\ndataset = "abalone"\ntest_fraction = 0.25\nmax_queries = 100\n\n'
                  f'[parties]\nn = {n}\n\n[protocol]\nname = "ppknn-ring"\nk = {K}\n\n'
                  '[runtime]\nkind = "ray"\nlayout = "hosted"\n')
    code, stdout, stderr, wall = _run_group([sys.executable, "-m", "ppknn", "run", str(sc)],
                                            dict(os.environ), 1800)
    if code != 0:
        raise RuntimeError(f"ppknn run failed ({code}): {stderr[-1500:]}")
    t = json.loads((out / "summary.json").read_text())["timings_s"]
    leak = t.get("leakage_s", 0.0) + t.get("recorded_s", 0.0)
    return {"system": "ppknn run", "form": "Ray, hosted layout", "parties": n, "cold_s": wall,
            "startup_s": t.get("startup_s"), "protocol_s": t.get("protocol_s"),
            "measure_s": t.get("measure_s"), "leakage_s": leak}


# --------------------------------------------------------------------------- the section
def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the numeric fields over repeats, with each time's range kept."""
    if len(rows) == 1:
        return rows[0]
    out = dict(rows[0])
    for key, value in rows[0].items():
        if isinstance(value, int) and all(r.get(key) == value for r in rows):
            continue  # a setting (parties, queries, batch), not a measurement
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [r[key] for r in rows if r.get(key) is not None]
            out[key] = statistics.median(values)
            if key.endswith("_s"):
                out[f"{key[:-2]}_range_s"] = [min(values), max(values)]
    out["repeats"] = len(rows)
    return out


def run_section(s: dict[str, Any], log: Callable[[str], None], *, python: Path,
                mpyc_timeout: float, only: set[str] | None = None) -> dict[str, Any]:
    """Both comparisons; returns ``{"mpyc": [...], "flower": [...]}`` (rows as in the CSV)."""
    only = only or {"mpyc", "flower"}
    result: dict[str, Any] = {"mpyc": [], "flower": []}
    with tempfile.TemporaryDirectory(prefix="ppknn-peers-") as t:
        tmp = Path(t)
        if "mpyc" in only:
            for queries in s["mpyc_queries"]:
                for n in s["mpyc_parties"]:
                    split = _split(n, queries, tmp)
                    repeats = s["repeats"] if queries <= s["small_queries"] else 1
                    samples: dict[str, list[dict[str, Any]]] = {}
                    for _ in range(repeats):  # alternate: MPyC, then each ring form
                        samples.setdefault("mpyc", []).append(
                            mpyc_case(python, split, n, tmp, mpyc_timeout,
                                      prss=s.get("mpyc_prss", False)))
                        for kind in s["ring_kinds"]:
                            samples.setdefault(kind, []).append(
                                ring_case(split, n, queries, kind))
                    rows = {key: _median_row(v) for key, v in samples.items()}
                    ring = rows[s["ring_kinds"][0]]
                    for key, row in rows.items():
                        if key != "mpyc" and not rows["mpyc"]["timed_out"]:
                            m = rows["mpyc"]
                            row["mpyc_protocol_over_ring"] = m["protocol_s"] / row["protocol_s"]
                            row["mpyc_cold_over_ring"] = m["cold_s"] / row["cold_s"]
                            row["mpyc_bytes_over_ring"] = m["bytes"] / row["bytes"]
                        result["mpyc"].append(row)
                    m = rows["mpyc"]
                    log(f"  n={n}, {queries} queries: MPyC " + (
                        f"stopped after {m['cold_s']:.0f} s" if m["timed_out"] else
                        f"{m['cold_s']:.1f} s end to end, secure part {m['protocol_s']:.2f} s, "
                        f"{m['bytes'] / 1e6:.1f} MB, agreement {m['agreement_knn']:.2f}")
                        + f"; ring ({ring['form']}) {ring['cold_s']:.1f} s cold, protocol "
                        f"{ring['protocol_s']:.3f} s, {ring['bytes'] / 1e6:.2f} MB, agreement "
                        f"{ring['agreement_knn']:.2f}, disclosure {ring['disclosure_mean']:.2f}")
        if "flower" in only:
            for n in s["flower_clients"]:
                fl = flower_case(python, n)  # alternate Flower and ppknn run
                e2e = ring_e2e_case(n, tmp)
                e2e["flower_over_ring"] = fl["cold_s"] / e2e["cold_s"]
                result["flower"] += [fl, e2e]
                log(f"  N={n}: Flower {fl['cold_s']:.1f} s end to end (round "
                    f"{fl['round_s']:.2f} s); ppknn run hosted {e2e['cold_s']:.1f} s (start-up "
                    f"{e2e['startup_s']:.2f}, protocol {e2e['protocol_s']:.2f}, leakage "
                    f"{e2e['leakage_s']:.2f}): Flower / ppknn {e2e['flower_over_ring']:.2f}")
    return result


COLUMNS = ("section", "system", "form", "parties", "queries", "timed_out", "repeats", "cold_s",
           "cold_range_s", "startup_s", "protocol_s", "protocol_range_s", "warm_protocol_s",
           "warm_s", "local_s", "measure_s", "leakage_s", "import_s", "round_s", "bytes",
           "party_peak_mb", "batch",
           "accuracy", "agreement_knn", "disclosure_mean", "disclosure_max",
           "mpyc_protocol_over_ring", "mpyc_cold_over_ring", "mpyc_bytes_over_ring",
           "flower_over_ring", "note")


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    return ([{"section": "secure kNN", **r} for r in result.get("mpyc", [])]
            + [{"section": "start-up + one round", **r} for r in result.get("flower", [])])


def _ratio(v: Any) -> str:
    """A ratio for the table: 23.9, 353, 11,240 (no exponent, so the columns stay apart)."""
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return "-".join(_cell(x) for x in v)
    return str(v)


def table(result: dict[str, Any]) -> str:
    """The two comparisons as plain-text tables."""
    lines = ["secure kNN on abalone (k = 5): MPyC beside ppknn's ring, the same split",
             f"{'system':<11}{'form':<38}{'n':>4}{'queries':>8}{'cold s':>9}{'start s':>9}"
             f"{'proto s':>10}{'warm s':>9}{'MB':>9}{'peak MB':>8}{'acc':>6}{'=kNN':>6}"
             f"{'discl':>7}{'t x':>9}{'B x':>8}"]
    for r in result.get("mpyc", []):
        if r.get("timed_out"):
            lines.append(f"{r['system']:<11}{r['form']:<38}{r['parties']:>4}{r['queries']:>8}"
                         f"{r['cold_s']:>9.1f}  {r.get('note', '')}")
            continue
        lines.append(
            f"{r['system']:<11}{r['form']:<38}{r['parties']:>4}{r['queries']:>8}"
            f"{r['cold_s']:>9.2f}{r['startup_s']:>9.2f}{r['protocol_s']:>10.4f}"
            f"{_cell(r.get('warm_s')):>9}{r['bytes'] / 1e6:>9.2f}"
            f"{_cell(r.get('party_peak_mb')):>8}{r['accuracy']:>6.2f}"
            f"{r['agreement_knn']:>6.2f}{r['disclosure_mean']:>7.2f}"
            f"{_ratio(r.get('mpyc_protocol_over_ring')):>9}"
            f"{_ratio(r.get('mpyc_bytes_over_ring')):>8}")
    lines.append("(cold: a fresh process to the answers (ring: and its leakage scored); start: "
                 "until the parties are up; proto: the protocol (MPyC: the secure part); "
                 "warm: the ring's second run in the same process; =kNN: agreement with plain "
                 "kNN; peak MB: MPyC's largest party's peak memory; discl: measured per-node "
                 "disclosure, mean over nodes; t x, B x: MPyC's "
                 "protocol time and bytes over this ring row's)")
    if result.get("flower"):
        lines += ["", "start-up + one round: Flower simulation beside ppknn run (hosted ring)",
                  f"{'system':<11}{'form':<25}{'N':>6}{'cold s':>9}{'start s':>9}"
                  f"{'round s':>9}{'leak s':>8}{'Flower/ppknn':>14}"]
        for r in result["flower"]:
            lines.append(f"{r['system']:<11}{r['form']:<25}{r['parties']:>6}{r['cold_s']:>9.2f}"
                         f"{_cell(r.get('startup_s')):>9}{_cell(r.get('protocol_s')):>9}"
                         f"{_cell(r.get('leakage_s')):>8}{_cell(r.get('flower_over_ring')):>14}")
    return "\n".join(lines)


def write_csv(result: dict[str, Any], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in _rows(result):
            w.writerow({k: (json.dumps(v) if isinstance(v, list) else v) for k, v in r.items()})


def plot(result: dict[str, Any], path: Path, title: str) -> None:
    """``peers.png``: protocol time and bytes of MPyC vs the ring; Flower vs ppknn run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    styles = {("MPyC", "n"): ("tab:red", "o"), ("in-process",): ("tab:blue", "s"),
              ("Ray, hosted layout",): ("tab:green", "^")}
    rows = [r for r in result.get("mpyc", []) if not r.get("timed_out")]
    for queries, ls in zip(sorted({r["queries"] for r in rows}), ("-", "--", ":")):
        for label, pick, color, marker in (
                ("MPyC", lambda r: r["system"] == "MPyC", *styles[("MPyC", "n")]),
                ("ring in-process", lambda r: r["form"] == "in-process",
                 *styles[("in-process",)]),
                ("ring on Ray (hosted)", lambda r: r["form"] == "Ray, hosted layout",
                 *styles[("Ray, hosted layout",)])):
            sel = sorted((r for r in rows if r["queries"] == queries and pick(r)),
                         key=lambda r: r["parties"])
            if not sel:
                continue
            xs = [r["parties"] for r in sel]
            axes[0].plot(xs, [r["protocol_s"] for r in sel], ls=ls, color=color, marker=marker,
                         label=f"{label}, {queries} queries")
            axes[1].plot(xs, [r["bytes"] / 1e6 for r in sel], ls=ls, color=color,
                         marker=marker, label=f"{label}, {queries} queries")
    for ax, ylabel, name in ((axes[0], "protocol time (s, log)", "secure kNN: protocol time"),
                             (axes[1], "bytes sent (MB, log)", "secure kNN: bytes")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("parties n")
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    stopped = [r for r in result.get("mpyc", []) if r.get("timed_out")]
    if stopped:
        axes[0].text(0.02, 0.02, "MPyC stopped at the time limit: " + ", ".join(
            f"n={r['parties']}/{r['queries']} q" for r in stopped), transform=axes[0].transAxes,
            fontsize=7)
    fl = result.get("flower", [])
    ax = axes[2]
    sizes = sorted({r["parties"] for r in fl})
    width = 0.38
    for i, (system, color) in enumerate((("Flower", "tab:orange"), ("ppknn run", "tab:green"))):
        vals = [next((r["cold_s"] for r in fl if r["system"] == system and r["parties"] == n),
                     0.0) for n in sizes]
        ax.bar([x + (i - 0.5) * width for x in range(len(sizes))], vals, width, color=color,
               label=system + (" simulation (Ray backend)" if system == "Flower" else
                               " (hosted ring on Ray)"))
    ax.set_xticks(list(range(len(sizes))), [f"N = {n:,}" for n in sizes])
    ax.set_ylabel("end-to-end wall time (s)")
    ax.set_xlabel("virtual clients / parties")
    ax.set_title("start-up + one round, fresh process", fontsize=10)
    ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, path, dpi=100)  # three panels; 100 dpi keeps docs/ within its budget
    plt.close(fig)


def write(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(result, indent=1, default=str))
    write_csv(result, out / "peers.csv")
    plot(result, out / "peers.png",
         f"MPyC and Flower beside ppknn ({result['mode']} run, {result['machine']['cpus']} CPUs,"
         f" {time.strftime('%Y-%m-%d', time.localtime(result['started']))})")


def section(quick: bool, log: Callable[[str], None], *, mpyc_timeout: float = 900.0,
            only: set[str] | None = None, mpyc_prss: bool = False) -> dict[str, Any] | None:
    """The peers' section for ``python -m benchmarks``: ``None`` (and a message) if missing."""
    python, msg = ensure_venv(create=False)
    log(f"  {msg}" + ("; skipped" if python is None else ""))
    if python is None:
        return None
    # mpyc_prss: MPyC's pseudorandom secret sharing (its default) or, False, its --no-prss,
    # the faster on this 2-CPU machine (docs/benchmarks/peers/README.md)
    s = {**(QUICK if quick else FULL), "mpyc_prss": mpyc_prss}
    result = {"mode": "quick" if quick else "full", "started": time.time(), "peers": msg,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in s.items()},
              "mpyc_timeout_s": mpyc_timeout}
    result.update(run_section(s, log, python=python, mpyc_timeout=mpyc_timeout, only=only))
    return result


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_peers",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (under a minute)")
    ap.add_argument("--output", default="results/peers", help="folder for peers.csv/json/png")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing folder")
    ap.add_argument("--install", action="store_true",
                    help=f"create the peers' virtual environment ({VENV}) if missing, "
                         "then stop")
    ap.add_argument("--mpyc-prss", action="store_true",
                    help="MPyC with its pseudorandom secret sharing (its default) instead "
                         "of --no-prss, which was faster here")
    ap.add_argument("--only", nargs="+", choices=["mpyc", "flower"], help="run only these")
    ap.add_argument("--mpyc-timeout", type=float, default=900.0,
                    help="stop an MPyC run after this many seconds (marked in the table)")
    args = ap.parse_args(argv)
    if args.install:
        python, msg = ensure_venv(create=True)
        print(msg, flush=True)
        return 0 if python is not None else 1
    out = Path(args.output)
    if out.exists() and not args.overwrite:
        print(f"error: {out} exists; pass --overwrite to replace it", file=sys.stderr)
        return 2
    # a SIGTERM (a job's time limit, a kill) ends the run like Ctrl-C, so that the party
    # processes of the case under way are stopped with it (_run_group)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = section(args.quick, lambda m: print(m, flush=True),
                         mpyc_timeout=args.mpyc_timeout, only=set(args.only or ()) or None,
                         mpyc_prss=args.mpyc_prss)
    finally:  # a caller's own handler (main called from Python) is back afterwards
        signal.signal(signal.SIGTERM, previous)
    if result is None:
        return 0
    print(table(result))
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    write(result, staging)
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    print(f"wrote {out}/peers.csv, peers.json and peers.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
