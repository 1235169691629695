"""The plugin interface stays small: what a protocol *is* is six members, the rest has defaults."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.protocol import ProtocolResult
from ppknn.simulations import registry
from ppknn.simulations.registry import REQUIRED, Measured, ProtocolPlugin

MAX_REQUIRED = 6


def _required_now() -> set[str]:
    """Counted from the class itself, not from REQUIRED: annotated members without a
    default, and abstract methods."""
    attrs = {n for n in ProtocolPlugin.__annotations__ if not hasattr(ProtocolPlugin, n)}
    return attrs | set(ProtocolPlugin.__abstractmethods__)


def test_at_most_six_required_members_and_exactly_these():
    required = _required_now()
    assert len(required) <= MAX_REQUIRED, sorted(required)
    assert required == {"name", "config_model", "roles", "driver", "plan", "baseline"}
    assert set(REQUIRED) == required and len(REQUIRED) == len(required)


def test_the_count_catches_a_new_required_member(monkeypatch):
    # a deliberately grown interface: one more annotated member without a default
    monkeypatch.setitem(ProtocolPlugin.__annotations__, "paper", "ClassVar[str]")
    assert len(_required_now()) == MAX_REQUIRED + 1


def test_no_plugin_declares_metrics_a_second_time():
    assert not hasattr(ProtocolPlugin, "metrics")
    for plugin in registry.plugins():
        assert not hasattr(plugin, "metrics"), plugin.name


@pytest.mark.parametrize("name", registry.names())
def test_title_is_the_docstring_summary(name):
    plugin = registry.get(name)
    summary = inspect.getdoc(type(plugin)).split("\n\n")[0]
    assert plugin.title == " ".join(summary.split()).removesuffix(".")
    assert plugin.title and "\n" not in plugin.title


def _plugin(**members):
    doc = members.pop("__doc__", "A test protocol (nobody's paper).\n\nBody.")
    return type("Fake", (ProtocolPlugin,), {"__doc__": doc, **members})


def test_title_default_and_explicit_title():
    assert _plugin().title == "A test protocol (nobody's paper)"
    assert _plugin(title="Mine").title == "Mine"


def test_register_names_a_missing_required_member():
    class Config(registry.ProtocolConfig):
        name: str = "fake-missing"

    cls = _plugin(name="fake-missing", config_model=Config,
                  driver=staticmethod(lambda *a: None), plan=lambda s, c, d: None,
                  baseline=lambda s, c, d: None)  # no roles
    with pytest.raises(ConfigError, match=r"does not define \['roles'\]"):
        registry.register(cls)
    assert registry.find("fake-missing") is None


def test_a_metric_that_is_not_json_is_refused_by_name():
    Measured(metrics={"k": 5, "note": "n", "per_position": [0.5, None], "d": {"a": 1},
                      "x": np.float64(0.5), "inf": float("inf")})
    with pytest.raises(ProtocolError, match="measured metric 'scores' is a ndarray"):
        Measured(metrics={"scores": np.zeros(3)})
    with pytest.raises(ProtocolError, match="demo metric 'model' is a object"):
        ProtocolResult(protocol="demo", predictions=np.zeros(2), hops=1,
                       metrics={"model": object()})
