"""The contract every built-in protocol passes: the public kit's battery (``ppknn.testing``).

A protocol is done when it passes this: its example scenario parses, plans the
same parties from one seed, runs through the one runner in-process and on Ray
with identical transcripts and results, repeats with its seed, writes the
common results shape (with its ground truth and leakage rows, baselines
stated), stays within its audit bound, and its ``[protocol]`` table is strict
(unknown keys and names refused before any party starts). The battery runs on
the protocols ppknn ships, with their scenarios in ``scenarios/``; a protocol
installed beside them runs it from its own tests (see "Writing a protocol").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppknn.simulations import registry
from ppknn.testing import ContractSuite, builtin_names, plugin_of

ROOT = Path(__file__).resolve().parents[1]
NAMES = builtin_names()


def test_every_builtin_protocol_is_registered():
    assert {"ppknn-ring", "dptt", "pca-perturbation"} <= set(NAMES)
    assert set(NAMES) <= set(registry.names())


@pytest.mark.parametrize("name", NAMES)
def test_example_scenario_exists_and_names_its_protocol(name):
    assert (ROOT / "scenarios" / f"{name}.toml").is_file()


class TestBuiltinContract(ContractSuite):
    """The kit's battery, once per built-in protocol, on ``scenarios/<name>.toml``."""

    @pytest.fixture(params=NAMES)
    def plugin(self, request):
        return plugin_of(request.param)

    @pytest.fixture
    def contract_scenario(self, plugin):
        return ROOT / "scenarios" / f"{plugin.name}.toml"

    @pytest.fixture
    def ray_session(self, ray_local):
        return ray_local
