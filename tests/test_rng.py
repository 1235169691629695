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


def test_secure_generators_are_chacha_and_reproducible_ones_pcg64():
    from ppknn.core.rng import ChaChaBitGenerator, describe

    secure = SeedPolicy(mode="secure").generator("party", 0, "pp-topk")
    assert isinstance(secure.bit_generator, ChaChaBitGenerator)
    x = secure.uniform(0.0, 1.0, 10_000)
    assert 0.0 <= x.min() and x.max() < 1.0 and abs(x.mean() - 0.5) < 0.02  # 7 sd
    assert secure.bit_generator.words_drawn >= 10_000
    assert isinstance(SeedPolicy(root=1).generator("p").bit_generator, np.random.PCG64)
    assert describe("secure")["cryptographic"].startswith("yes")
    assert describe("reproducible")["cryptographic"] == "no"
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(secure.bit_generator)


def test_chacha_words_are_the_chacha20_keystream(monkeypatch):
    """The words are exactly ChaCha20 under the key and nonce drawn from os.urandom."""
    import os

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    from ppknn.core.rng import ChaChaBitGenerator

    key, nonce = bytes(range(32)), bytes(range(16))
    drawn = iter([key, nonce])
    monkeypatch.setattr(os, "urandom", lambda n: next(drawn))
    g = np.random.Generator(ChaChaBitGenerator())
    words = g.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
    stream = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor().update(bytes(32))
    assert words.tolist() == np.frombuffer(stream, dtype=np.uint64).tolist()


def test_pp_topk_fill_in_secure_mode_comes_from_the_csprng():
    """Every ring owner's PP-TopK generator is ChaCha-backed, and the fills draw from it."""
    from ppknn.core.messages import RANDOM_FILL
    from ppknn.core.rng import ChaChaBitGenerator
    from ppknn.core.runtime import InProcessRuntime
    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario

    def run(mode):
        sc = parse_scenario({"run": {"mode": mode, "seed": 1},
                             "data": {"dataset": "sklearn:iris", "max_queries": 10},
                             "parties": {"n": 4}, "protocol": {"k": 3, "p0": 1.0, "d": 1.0},
                             "runtime": {"kind": "inprocess"}})
        rt = InProcessRuntime()
        result = execute(sc, runtime=rt)
        gens = [rt.state(p, "_rng_topk") for p in rt.parties if p.startswith("owner-")]
        fills = sum(int((m.provenance["g"] == RANDOM_FILL).sum())
                    for m in result.transcript.messages(with_provenance=True)
                    if "g" in m.provenance)
        return gens, fills

    gens, fills = run("secure")
    assert len(gens) == 4 and fills > 0  # random fills were sent
    assert all(isinstance(g.bit_generator, ChaChaBitGenerator) for g in gens)
    # with P0 = d = 1 every owner that inserts values randomises: it draws its fills
    assert sum(g.bit_generator.words_drawn for g in gens) > 0
    assert all(isinstance(g.bit_generator, np.random.PCG64) for g in run("reproducible")[0])
