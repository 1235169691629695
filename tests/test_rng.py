"""Seeding policy: seeded runs repeat, unseeded (secure) runs differ, streams independent."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode, SeedPolicy
from tests.helpers import run_on, split_dataset


def test_streams_repeat_and_differ():
    p = SeedPolicy(root=3)
    assert p.generator("party", 0, "x").random() == p.generator("party", 0, "x").random()
    assert p.generator("party", 0, "x").random() != p.generator("party", 1, "x").random()
    assert p.generator("party", 0).random() != SeedPolicy(root=4).generator("party", 0).random()


def test_secure_mode_differs_each_time_and_masks_from_os():
    p = SeedPolicy(root=3, mode="secure")
    assert p.mode is RandomnessMode.SECURE
    assert p.generator("a").random() != p.generator("a").random()
    a, b = p.source("a").uint64(4), p.source("a").uint64(4)
    assert a.dtype == np.uint64 and not np.array_equal(a, b)


def test_reproducible_uint64_repeats():
    p = SeedPolicy(root=1)
    np.testing.assert_array_equal(p.source("m").uint64((2, 2)), p.source("m").uint64((2, 2)))


@pytest.mark.parametrize("bad", [-1, 1.5, "x", True])
def test_bad_seed(bad):
    with pytest.raises(ConfigError, match="seed"):
        SeedPolicy(root=bad)


def test_bad_mode():
    with pytest.raises(ConfigError, match="'reproducible' or 'secure'"):
        SeedPolicy(root=1, mode="fast")


def test_seeded_protocol_runs_repeat_and_seeds_differ():
    ds, X, y, Q, _ = split_dataset("glass", 4)
    a, _ = run_on("inprocess", X, y, ds.n_classes, Q, seed=1)
    b, _ = run_on("inprocess", X, y, ds.n_classes, Q, seed=1)
    c, _ = run_on("inprocess", X, y, ds.n_classes, Q, seed=2)
    np.testing.assert_array_equal(a.final_vector, b.final_vector)
    assert not np.array_equal(a.final_vector, c.final_vector)
