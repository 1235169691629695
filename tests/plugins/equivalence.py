"""Checks shared by the protocol tests: Ray equals in-process; bad input is refused early."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ppknn.core.transcript import Transcript
from ppknn.simulations.results import summary_of
from ppknn.simulations.runner import RunResult, execute
from ppknn.simulations.scenario import Scenario


def _strip(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("timings_s", "runtime")}


def assert_ray_equals_inprocess(scenario: Scenario, tmp_path: Path, **ray: object
                                ) -> tuple[RunResult, RunResult, list]:
    """Run ``scenario`` in-process and on Ray (``ray``: ``[runtime]`` keys); assert that
    predictions, summaries (timings excepted) and canonical transcripts are identical.

    Returns both results and the canonical transcript rows.
    """
    local = execute(scenario.with_overrides(runtime={"kind": "inprocess"}),
                    transcript_dir=tmp_path / "local")
    on_ray = execute(scenario.with_overrides(runtime={"kind": "ray", **ray}),
                     transcript_dir=tmp_path / "ray")
    for a, b in zip(local.outcomes, on_ray.outcomes, strict=True):
        assert a.name == b.name
        np.testing.assert_array_equal(a.predictions, b.predictions)
    assert _strip(summary_of(local)) == _strip(summary_of(on_ray))
    rows = Transcript(tmp_path / "local").canonical_rows()
    assert rows == Transcript(tmp_path / "ray").canonical_rows()
    assert rows
    return local, on_ray, rows


def assert_refused(data: dict, where: str, message: str) -> None:
    """``data`` is refused with a ``ConfigError`` matching ``message`` before any party starts:
    by the scenario parser (``where == "parse"``) or by planning (``"prepare"``)."""
    import pytest

    from ppknn.core.errors import ConfigError
    from ppknn.simulations.runner import prepare
    from ppknn.simulations.scenario import parse_scenario

    assert where in ("parse", "prepare"), where
    if where == "parse":
        with pytest.raises(ConfigError, match=message):
            parse_scenario(data, source="test")
    else:
        scenario = parse_scenario(data, source="test")
        with pytest.raises(ConfigError, match=message):
            prepare(scenario)
