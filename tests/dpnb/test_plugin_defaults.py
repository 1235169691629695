"""The dp-nb scenario's defaults are the estimator's; ``paper = true`` gives the paper's."""

from __future__ import annotations

import inspect

import pytest

from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_nb.estimator import DPNaiveBayes
from ppknn.protocols.dp_nb.plugin import DPNBConfig
from ppknn.protocols.dp_nb.protocol import ModelRequest

ESTIMATOR = {k: v.default for k, v in inspect.signature(DPNaiveBayes).parameters.items()}


def test_scenario_defaults_are_the_estimators() -> None:
    c = DPNBConfig()
    assert (c.method, c.budget_split, c.noise_floor) == (
        ESTIMATOR["method"], ESTIMATOR["budget"], ESTIMATOR["noise_floor"])
    assert (c.noise, c.gamma, c.trim, c.neighbours, c.density) == (
        ESTIMATOR["noise"], ESTIMATOR["gamma"], ESTIMATOR["trim"], ESTIMATOR["neighbours"],
        ESTIMATOR["density"])
    config = c.request().config()  # what the owner trains with
    assert (config.method, config.budget, config.noise_floor) == ("global", (1.0, 2.0, 1.0), 1.0)


def test_paper_settings_fill_only_what_is_not_given() -> None:
    c = DPNBConfig(paper=True)
    assert (c.method, c.budget_split, c.noise_floor) == ("smooth", "equal", 0.0)
    v = DPNBConfig(paper=True, method="vaidya")
    assert (v.method, v.budget_split, v.noise_floor) == ("vaidya", "equal", 0.0)
    assert DPNBConfig(budget_split="equal").method == "global"


@pytest.mark.parametrize("request_", [
    ModelRequest(epsilon=0.5),
    ModelRequest(epsilon=0.5, method="global", budget=(1.0, 2.0, 1.0), noise_floor=1.0),
    ModelRequest(epsilon=2.0, method="smooth", budget=(3.0, 1.0, 0.5), noise_floor=0.25),
])
def test_the_request_message_carries_the_split_and_the_floor(request_: ModelRequest) -> None:
    msg = request_.to_message(run_id="r", sender="a", receiver="o", request=3)
    back, rid = ModelRequest.from_message(msg)
    assert back == request_ and rid == 3
    assert back.config() == request_.config()


def test_a_message_without_them_is_the_papers_split() -> None:
    msg = ModelRequest(epsilon=0.5, budget=(1.0, 2.0, 1.0), noise_floor=1.0).to_message(
        run_id="r", sender="a", receiver="o", request=1)
    payload = {k: v for k, v in msg.payload.items() if k not in ("budget", "noise_floor")}
    old = msg.model_copy(update={"payload": payload}) if hasattr(msg, "model_copy") else None
    if old is None:
        from dataclasses import replace
        old = replace(msg, payload=payload, provenance={k: msg.provenance[k] for k in payload})
    back, _ = ModelRequest.from_message(old)
    assert (back.budget, back.noise_floor) == ("equal", 0.0)


def test_bad_values_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="budget_split"):
        DPNBConfig(budget_split=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="noise_floor"):
        DPNBConfig(noise_floor=-1.0)
    with pytest.raises(ConfigError, match="budget"):
        ModelRequest(budget=(1.0, -2.0, 1.0))
