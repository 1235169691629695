"""The recorder's process or its node dies mid-run: checks run in a separate process.

``python -m tests.recorder_faults_script CHECK FOLDER`` prints one JSON line
(``RESULT {...}``) with what CHECK measured; the transcript goes to
``FOLDER/transcript``. ``recorder`` kills the recorder actor on a local Ray;
``raylet`` kills, on a two-node ``ray.cluster_utils.Cluster``, the raylet of the
node that hosts every party and the recorder. ``tests/test_recorder_faults_ray.py``
runs them and checks the results.

Each run has a slow call (a ``slow`` fault shorter than ``party_timeout_s``: the
run goes on, only later), and the process is killed while it waits there, once
the recorder has received records: "mid-run", with a transcript so far.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import ray

from ppknn.core.errors import PartyFailure
from ppknn.core.runtime.ray_runtime import RayRuntime
from ppknn.core.transcript import RECORDER_NAME, Transcript
from ppknn.simulations.runner import execute
from tests.conftest import ray_env
from tests.test_faults import scenario

TIMEOUT_S = 3.0
SLOW_S = 2.0
FAST_FAILURE = {"health_check_period_ms": 500, "health_check_failure_threshold": 4,
                "health_check_initial_delay_ms": 0}


def faulty_scenario(mark: Path, placement: dict | None = None):
    """The ring, 4 owners on one host, every record sent at once, one slow call."""
    runtime = {"kind": "ray", "layout": "hosted", "hosts": 1, "party_timeout_s": TIMEOUT_S,
               "record_batch": 1}
    if placement:
        runtime["placement"] = placement
    sc = scenario("ppknn-ring", **runtime).set_key("parties.n", 4)
    return sc.with_overrides(faults={"party": "owner-02", "method": "*", "occurrence": 3,
                                     "kind": "slow", "delay_s": SLOW_S, "mark": str(mark)})


def run(sc, rt: RayRuntime, folder: Path, kill) -> dict:
    """Run ``sc`` on ``rt``; ``kill()`` once the slow call started and records arrived."""
    mark = Path(sc.faults.mark)
    seen: dict = {}

    def killer() -> None:
        deadline, last = time.monotonic() + 120, -1
        while time.monotonic() < deadline:
            if mark.is_file() and rt.recorder is not None:
                count = ray.get(rt.recorder.ping.remote(), timeout=30)
                if count > 0 and count == last:  # what was sent before the slow call is in
                    seen["received_before_kill"] = count
                    seen["killed_at"] = time.monotonic()
                    kill()
                    return
                last = count
            time.sleep(0.2)

    thread = threading.Thread(target=killer)
    thread.start()
    result: dict = {}
    try:
        execute(sc, transcript_dir=folder / "transcript", runtime=rt)
        result["raised"] = None
    except PartyFailure as exc:
        result.update(raised="PartyFailure", party=exc.party, reason=exc.reason)
    except Exception as exc:  # noqa: BLE001 - reported, the test says what was expected
        result.update(raised=type(exc).__name__, reason=str(exc))
    ended = time.monotonic()
    thread.join()
    result.update(seen)
    result["seconds_after_kill"] = ended - seen["killed_at"] if "killed_at" in seen else None
    transcript = folder / "transcript"
    result["files"] = sorted(p.name for p in transcript.iterdir()) if transcript.is_dir() else []
    try:
        result["checked_rows"] = Transcript(transcript).check()
    except Exception as exc:  # noqa: BLE001
        result["check_error"] = str(exc)
    return result


def check_recorder(folder: Path) -> dict:
    """Kill the recorder actor (its process) mid-run, on a local Ray."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, runtime_env=ray_env())
    try:
        rt = RayRuntime(layout="hosted", hosts=1)
        sc = faulty_scenario(folder / "fault-fired-at")

        def kill() -> None:
            pid = ray.get(rt.recorder.__ray_call__.remote(lambda self: os.getpid()), timeout=30)
            os.kill(pid, signal.SIGKILL)

        try:
            return run(sc, rt, folder, kill) | {"timeout_s": TIMEOUT_S}
        finally:
            rt.shutdown()
    finally:
        ray.shutdown()


def check_raylet(folder: Path) -> dict:
    """Kill the raylet of the node holding every party and the recorder (a node lost)."""
    from ray import ray_constants
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "_system_config": FAST_FAILURE})
    node = cluster.add_node(num_cpus=1, resources={"org": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, runtime_env=ray_env(), logging_level="ERROR",
             log_to_driver=False)
    try:
        placement = {"*": {"org": 0.01}, RECORDER_NAME: {"org": 0.01}}
        sc = faulty_scenario(folder / "fault-fired-at", placement)
        rt = RayRuntime(layout="hosted", hosts=1, placement=placement)

        def kill() -> None:
            raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process
            raylet.send_signal(signal.SIGKILL)

        try:
            out = run(sc, rt, folder, kill)
        finally:
            rt.shutdown()
        return out | {"timeout_s": TIMEOUT_S}
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    checks = {"recorder": check_recorder, "raylet": check_raylet}
    print("RESULT " + json.dumps(checks[sys.argv[1]](Path(sys.argv[2]))), flush=True)
