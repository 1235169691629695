"""The client and server as Ray actors: the same transcript and release as in-process."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.transcript import Transcript
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.utility import Utility

from .helpers import run_recorded

pytestmark = pytest.mark.ray


def test_ray_and_inprocess_give_identical_transcripts(ray_local, tmp_path):
    rng = np.random.default_rng(0)
    x, q = rng.normal(size=(5000, 2)), rng.normal(size=(400, 2))
    setup = DPTTSetup(variant="GS-N3", utility=Utility.dis(0.3), epsilon=2.0)
    local, _ = run_recorded(x, q, setup, seed=8, transcript_dir=tmp_path / "local")
    on_ray, _ = run_recorded(x, q, setup, seed=8, kind="ray", transcript_dir=tmp_path / "ray")
    assert np.array_equal(local.outcome.ids, on_ray.outcome.ids)
    assert np.array_equal(local.outcome.slots, on_ray.outcome.slots)
    assert np.array_equal(local.outcome.seen, on_ray.outcome.seen)
    rows_local = Transcript(tmp_path / "local").canonical_rows()
    rows_ray = Transcript(tmp_path / "ray").canonical_rows()
    assert len(rows_local) == local.messages == len(rows_ray)
    assert rows_local == rows_ray
