"""In ``mode = "secure"`` every draw of a run comes from the CSPRNG, never a seeded PCG64.

The DP-TT GEO baseline and the lying client (a deviation) are the draws outside the
parties' own streams; the run below has both. A spy on numpy's seeded generators
records every one built from project code; in secure mode there must be none.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.rng import ChaChaBitGenerator
from ppknn.simulations.leakage.deviations import run_with_deviations
from ppknn.simulations.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("/parties/", "/protocols/", "/simulations/")


def _caller() -> str | None:
    """The first project frame (parties, protocols, simulations) above the spy, if any.

    Project code that calls a library which builds the generator counts as the caller.
    """
    for frame in inspect.stack()[2:]:
        path = frame.filename.replace("\\", "/")
        if frame.function == "<module>":
            return None  # a module being imported (a library's import-time set-up)
        if any(part in path for part in PROJECT) and "/tests/" not in path:
            return f"{path}:{frame.lineno}"
    return None


@pytest.fixture
def seeded_draws(monkeypatch):
    """Where project code built a seeded numpy generator (PCG64 or default_rng)."""
    sites: list[str] = []
    real_pcg, real_default = np.random.PCG64, np.random.default_rng

    def pcg(*args, **kwargs):
        if (where := _caller()) is not None:
            sites.append(where)
        return real_pcg(*args, **kwargs)

    def default_rng(*args, **kwargs):
        if (where := _caller()) is not None:
            sites.append(where)
        return real_default(*args, **kwargs)

    monkeypatch.setattr(np.random, "PCG64", pcg)
    monkeypatch.setattr(np.random, "default_rng", default_rng)
    return sites


def _scenario(mode: str):
    sc = load_scenario(ROOT / "scenarios" / "deviation_dptt_lie_bits.toml")
    return sc.set_keys([("run.mode", mode), ("protocol.geo_radius", 0.2),
                        ("data.dataset", "synthetic:classification?rows=600&features=2"
                                         "&classes=2"),
                        ("data.test_fraction", 0.05), ("runtime.kind", "inprocess")])


def test_secure_mode_builds_no_seeded_generator_in_project_code(seeded_draws):
    result, _ = run_with_deviations(_scenario("secure"))
    assert result.outcomes, "the run completed"
    assert seeded_draws == []


def test_the_spy_sees_the_seeded_draws_of_a_reproducible_run(seeded_draws):
    """The same run in reproducible mode: the spy must see the seeded streams (power)."""
    run_with_deviations(_scenario("reproducible"))
    assert any("/dptt/plugin/__init__.py" in s for s in seeded_draws)  # the GEO baseline
    assert any("/dptt/plugin/deviations.py" in s for s in seeded_draws)  # the lying client


def test_lying_client_draws_from_the_csprng_in_secure_mode():
    from ppknn.protocols.dptt.plugin.deviations import LyingClient

    secure = LyingClient(deviation={"probability": 0.5}, run_id="r", seed=3, mode="secure")
    seeded = LyingClient(deviation={"probability": 0.5}, run_id="r", seed=3)
    assert isinstance(secure._lies.bit_generator, ChaChaBitGenerator)
    assert isinstance(seeded._lies.bit_generator, np.random.PCG64)
    again = LyingClient(deviation={"probability": 0.5}, run_id="r", seed=3, mode="secure")
    # 128 fresh 64-bit draws agree by chance with probability 2**-8192
    assert not np.array_equal(secure._lies.integers(0, 2**63, 128),
                              again._lies.integers(0, 2**63, 128))


def test_geo_baseline_draws_from_the_csprng_in_secure_mode(monkeypatch):
    from ppknn.protocols.dptt import plugin as dptt

    seen = []
    real = dptt.Geo.perturb

    def perturb(self, queries, rng):
        seen.append(type(rng.bit_generator))
        return real(self, queries, rng)

    monkeypatch.setattr(dptt.Geo, "perturb", perturb)
    run_with_deviations(_scenario("secure"))
    run_with_deviations(_scenario("reproducible"))
    # each call runs the deviant scenario and its honest twin; each run draws once (the
    # measurement and the ground truth share the draw)
    assert seen == [ChaChaBitGenerator] * 2 + [np.random.PCG64] * 2
