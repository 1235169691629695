"""The contract kit (``ppknn.testing``) catches a broken plugin, and leaves the registry as it was.

Variants of the tutorial's ``dp-count`` (``examples/dp_count``), each broken in one way, are
registered under their own names: a table that takes unknown keys, an owner whose noise
ignores the seed, an attack whose rows state no baseline. The check that guards each
property fails on its variant (and the honest protocol passes them all:
``tests/test_tutorial_protocol.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from pydantic import ConfigDict

from ppknn.core.runtime import PartySpec
from ppknn.simulations import registry
from ppknn.simulations.leakage import attacks
from ppknn.simulations.leakage.table import proportion_row
from ppknn.testing import (
    builtin_names,
    check_config,
    check_leakage,
    check_plan,
    check_repeatable,
    registered,
    run_folder,
    scenario_data,
)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "examples" / "dp_count" / "src"
SCENARIO = ROOT / "examples" / "dp_count" / "scenarios" / "dp-count.toml"


@pytest.fixture
def dp_count(monkeypatch):
    """The tutorial's modules (``dp_count.plugin``, ``dp_count.protocol``), importable."""
    monkeypatch.syspath_prepend(str(SRC))
    import dp_count.plugin
    import dp_count.protocol

    return dp_count


def _scenario(name: str) -> dict:
    data = scenario_data(SCENARIO)
    data["protocol"]["name"] = name
    return data


def _variant(dp_count, name: str, *, extra: str = "forbid", owner: type | None = None):
    """A plugin class like ``DPCount`` registered as ``name``, its owner class ``owner``."""
    base = dp_count.plugin.DPCount
    config = type(f"Config_{name}", (dp_count.plugin.DPCountConfig,), {
        "__annotations__": {"name": Literal[name]}, "name": name,  # type: ignore[valid-type]
        "model_config": ConfigDict(extra=extra, frozen=True)})

    def plan(self, cfg, data):
        out = base.plan(self, cfg, data)
        if owner is None:
            return out
        specs = tuple(PartySpec(s.party_id, owner, s.kwargs) if s.party_id == "owner" else s
                      for s in out.specs)
        return type(out)(**{**out.__dict__, "specs": specs})

    return type(f"Plugin_{name}", (base,), {"name": name, "config_model": config,
                                            "adversaries": (), "plan": plan})


def test_a_table_that_takes_unknown_keys_fails_the_config_check(dp_count):
    loose = _variant(dp_count, "kit-loose", extra="allow")
    with registered(loose):
        with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
            check_config("kit-loose", _scenario("kit-loose"))
    strict = _variant(dp_count, "kit-strict")
    with registered(strict):
        check_config("kit-strict", _scenario("kit-strict"))


def test_noise_that_ignores_the_seed_fails_the_repeatability_check(dp_count):
    class UnseededOwner(dp_count.protocol.CountOwner):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.rng = np.random.default_rng()  # OS entropy: the seed is ignored

    unseeded = _variant(dp_count, "kit-unseeded", owner=UnseededOwner)
    with registered(unseeded):
        check_plan("kit-unseeded", _scenario("kit-unseeded"))  # the plan still repeats
        with pytest.raises(AssertionError, match="one seed gave two different transcripts"):
            check_repeatable("kit-unseeded", _scenario("kit-unseeded"))
    seeded = _variant(dp_count, "kit-seeded")
    with registered(seeded):
        check_repeatable("kit-seeded", _scenario("kit-seeded"))


def test_leakage_rows_without_a_baseline_fail_the_leakage_check(dp_count, tmp_path):
    bare = _variant(dp_count, "kit-bare")
    with registered(bare):
        @attacks.register("kit-bare", "bare", default=True, description="no baseline")
        def _bare(ctx, adv):
            return [proportion_row(successes=1, trials=2, protocol=ctx.protocol,
                                   observer="analyst-0", target="owner", attack=adv.attack,
                                   quantity="q")]

        folder = run_folder("kit-bare", _scenario("kit-bare"), tmp_path / "run")
        with pytest.raises(AssertionError, match="baseline_name"):
            check_leakage("kit-bare", folder)


def test_registered_restores_the_registry_and_the_attack_table(dp_count):
    before = registry.names()
    if "dp-count" in before:
        pytest.skip("the tutorial's package is installed: registered() leaves it registered")
    for _ in range(2):  # the attacks its module registered on import come back each time
        with registered(dp_count.plugin.DPCount):
            assert "dp-count" in registry.names()
            assert attacks.allowed("dp-count") == ["count-rounding"]
            assert "dp-count" not in builtin_names()
        assert registry.names() == before and attacks.allowed("dp-count") == []
