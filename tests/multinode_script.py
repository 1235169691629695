"""Multi-node checks on a ``ray.cluster_utils.Cluster``, run in a separate process.

``python -m tests.multinode_script CHECK`` prints one JSON line with the
results of CHECK (``placement`` or ``node-loss``). The test module
``tests/test_multinode.py`` runs it, so the cluster never mixes with the
session's local Ray instance.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np
import ray
from ray.cluster_utils import Cluster

from ppknn.core.errors import PartyFailure
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario
from tests.conftest import ray_env

FAST_FAILURE = {"health_check_period_ms": 500, "health_check_failure_threshold": 4,
                "health_check_initial_delay_ms": 0}


def start_cluster():
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"head": 1}, "_system_config": FAST_FAILURE})
    nodes = {"org_a": cluster.add_node(num_cpus=1, resources={"org_a": 1}),
             "org_b": cluster.add_node(num_cpus=1, resources={"org_b": 1})}
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, runtime_env=ray_env(), logging_level="ERROR",
             log_to_driver=False)
    return cluster, nodes


def scenario(kind, layout="hosted", placement=None, timeout=30.0, n=6):
    runtime = {"kind": kind, "channels": True, "party_timeout_s": timeout}
    if kind == "ray":
        runtime |= {"layout": layout, "hosts": 4, "placement": placement or {}}
    return parse_scenario({"run": {"name": "multinode", "seed": 4},
                           "data": {"dataset": "pima"}, "parties": {"n": n},
                           "protocol": {"k": 5, "rounds": 2}, "runtime": runtime})


def check_placement() -> dict:
    cluster, nodes = start_cluster()
    try:
        placement = {f"owner-0{i}": {"org_a" if i < 3 else "org_b": 0.01} for i in range(6)}
        from ppknn.core.runtime.ray_runtime import RayRuntime
        from ppknn.simulations import runner

        prepared = runner.prepare(scenario("ray", placement=placement))
        rt = RayRuntime(layout="hosted", hosts=4, placement=placement)
        seen = {}
        original = rt.start

        def start(specs, context):
            original(specs, context)
            seen.update(rt.party_nodes())

        rt.start = start
        out = execute(scenario("ray", placement=placement), runtime=rt)
        rt.shutdown()
        local = execute(scenario("inprocess"))
        node_of = {k: v.node_id for k, v in nodes.items()}
        return {
            "same_predictions": bool(np.array_equal(out.predictions, local.predictions)),
            "nodes_used": len(set(seen.values())),
            "org_a_on_a": all(seen[f"owner-0{i}"] == node_of["org_a"] for i in range(3)),
            "org_b_on_b": all(seen[f"owner-0{i}"] == node_of["org_b"] for i in range(3, 6)),
            "ring": list(prepared.plan.public["ring"]),
        }
    finally:
        ray.shutdown()
        cluster.shutdown()


def check_node_loss() -> dict:
    cluster, nodes = start_cluster()
    try:
        from ppknn.core.runtime import PartySpec, RunContext, Step
        from ppknn.core.runtime.ray_runtime import RayRuntime
        from tests.test_runtime_ray import Relay

        names = [f"p{i}" for i in range(6)]
        placement = {p: {"org_a" if i % 2 == 0 else "org_b": 0.01} for i, p in enumerate(names)}
        rt = RayRuntime(layout="actor-per-party", placement=placement)
        rt.start([PartySpec(p, Relay, {"me": p, "to": names[(i + 1) % 6], "sleep": 0.05})
                  for i, p in enumerate(names)], RunContext(run_id="r", party_timeout_s=20))
        ref = rt.chain([Step(p, "step", (r,), "relay", r) for r in range(1, 200)
                        for p in names])
        on_b = [p for p in names if placement[p].get("org_b")]
        threading.Timer(2.0, cluster.remove_node, args=(nodes["org_b"],)).start()
        t0 = time.monotonic()
        try:
            rt.fetch(ref)
            result = {"raised": False}
        except PartyFailure as exc:
            result = {"raised": True, "party": exc.party, "reason": exc.reason,
                      "party_on_removed_node": exc.party in on_b}
        result["seconds"] = time.monotonic() - t0
        return result
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    checks = {"placement": check_placement, "node-loss": check_node_loss}
    print("RESULT " + json.dumps(checks[sys.argv[1]]()), flush=True)
