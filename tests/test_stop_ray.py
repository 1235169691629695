"""``stop_ray``: Ray's shutdown without its one-second wait on the autoscaler monitor."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ppknn.core.runtime import ray_runtime


class _Process:
    """A stand-in for a ``subprocess.Popen`` that only records what is done to it."""

    def __init__(self, alive: bool = True) -> None:
        self.alive, self.killed = alive, False

    def poll(self):
        return None if self.alive else -9

    def kill(self) -> None:
        self.killed, self.alive = True, False

    def wait(self, timeout=None) -> int:
        return -9


def _stub_shutdown(monkeypatch, monitors):
    """Stub Ray's shutdown; returns, per call, whether each monitor was still alive."""
    seen: list[list[bool]] = []
    monkeypatch.setattr(ray_runtime, "_own_monitors", lambda: monitors)
    monkeypatch.setattr(ray_runtime.ray, "shutdown", lambda: seen.append(
        [m.poll() is None for m in monitors]))
    return seen


def test_the_monitor_is_killed_before_ray_shuts_down(monkeypatch):
    monitor, gone = _Process(), _Process(alive=False)
    seen = _stub_shutdown(monkeypatch, [monitor, gone])
    ray_runtime.stop_ray()
    assert seen == [[False, False]]  # Ray's shutdown found no monitor left to wait for
    assert monitor.killed and not gone.killed  # one already gone is left alone


def test_without_a_monitor_of_its_own_it_is_rays_shutdown(monkeypatch):
    seen = _stub_shutdown(monkeypatch, [])
    ray_runtime.stop_ray()
    assert seen == [[]]


def test_a_monitor_that_cannot_be_killed_leaves_the_shutdown_to_ray(monkeypatch):
    class Stubborn(_Process):
        def kill(self) -> None:
            raise PermissionError("not yours")

    stubborn = Stubborn()
    seen = _stub_shutdown(monkeypatch, [stubborn])
    ray_runtime.stop_ray()
    assert seen == [[True]]  # Ray's own shutdown still ran, and stops it as before


_SCRIPT = """
import json, ray
from ppknn.core.runtime import ray_runtime

ray.init(address="local", include_dashboard=False, logging_level="ERROR",
         log_to_driver=False, num_cpus=1)
node = ray._private.worker._global_node
processes = [info.process for infos in node.all_processes.values() for info in infos]
monitors = ray_runtime._own_monitors()
shutdown, alive_at_shutdown = ray.shutdown, []
ray.shutdown = lambda: (alive_at_shutdown.extend(m.poll() is None for m in monitors),
                        shutdown())
ray_runtime.stop_ray()
print(json.dumps({"monitors": len(monitors), "alive_at_shutdown": alive_at_shutdown,
                  "left": [p.pid for p in processes if p.poll() is None],
                  "initialized": ray.is_initialized()}))
"""


@pytest.mark.timeout(180)
def test_a_local_ray_stops_whole_with_its_monitor_killed_first(tmp_path):
    """On a real local instance: one monitor found, dead before Ray's shutdown, nothing left."""
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          timeout=170, cwd=tmp_path, env={**os.environ,
                                                          "RAY_AUTH_MODE": "token"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"monitors": 1, "alive_at_shutdown": [False], "left": [],
                   "initialized": False}


@pytest.mark.parametrize("cpus, parties, hosts", [
    (1, 64, 1), (2, 64, 1), (2.0, 64, 1), (3, 64, 2), (64, 64, 63), (0.5, 64, 1),
    (2, ray_runtime.HOST_PER_CPU_FROM - 1, 1),  # one actor per CPU with the recorder
    (2, ray_runtime.HOST_PER_CPU_FROM, 2), (8, 100_000, 8), (1, 100_000, 1),  # a host per CPU
])
def test_the_default_host_count(cpus, parties, hosts):
    assert ray_runtime.default_hosts(cpus, parties) == hosts
