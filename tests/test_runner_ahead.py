"""On Ray the baselines are computed while the driver waits; the run is the same."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from ppknn.simulations import registry
from ppknn.simulations.runner import _Ahead, execute
from ppknn.simulations.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def test_ahead_returns_what_was_computed_on_its_own_thread():
    seen = []

    def compute():
        seen.append(threading.current_thread().name)
        return 42

    assert _Ahead(compute).result() == 42
    assert seen == ["ppknn-baselines"]


def test_ahead_raises_the_error_where_the_result_is_asked_for():
    error = ValueError("no baseline")

    def compute():
        raise error

    ahead = _Ahead(compute)
    with pytest.raises(ValueError) as caught:
        ahead.result()
    assert caught.value is error


def test_ahead_discarded_waits_for_its_thread_and_drops_the_error():
    release = threading.Event()

    def compute():
        release.wait(5)
        raise RuntimeError("never reported")

    ahead = _Ahead(compute)
    release.set()
    ahead.discard()  # no exception
    assert not ahead._thread.is_alive()


def _small(kind: str):
    sc = load_scenario(ROOT / "scenarios" / "ppknn-ring.toml")
    return sc.with_overrides(data={"max_queries": 30},
                             runtime={"kind": kind, "layout": "hosted"})


@pytest.mark.ray
def test_a_baseline_error_on_ray_surfaces_from_execute(ray_local, monkeypatch):
    plugin = registry.get("ppknn-ring")

    def broken(self, config, data):
        raise ZeroDivisionError("baseline broke")

    monkeypatch.setattr(type(plugin), "baseline", broken)
    with pytest.raises(ZeroDivisionError, match="baseline broke"):
        execute(_small("ray"))
    assert not any(t.name == "ppknn-baselines" for t in threading.enumerate())


@pytest.mark.ray
def test_baselines_ahead_on_ray_equal_the_in_process_ones(ray_local):
    local = execute(_small("inprocess"))
    on_ray = execute(_small("ray"))
    for a, b in zip(local.outcomes, on_ray.outcomes, strict=True):
        assert a.baseline.name == b.baseline.name
        np.testing.assert_array_equal(a.baseline.predictions, b.baseline.predictions)
