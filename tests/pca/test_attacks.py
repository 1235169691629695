"""Transform and correlation attacks over the miner's view."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.data import DomainBounds
from ppknn.core.errors import ProtocolError
from ppknn.core.messages import Message
from ppknn.core.transcript import View
from ppknn.protocols.pca_perturbation.attacks import (
    attack,
    filter_range,
    pca_filter,
    reconstruct,
    release_message,
)
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.privacy import average_privacy
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
from tests.pca.conftest import unit_bounds


def low_rank(n=2000, m=10, rank=2, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, rank)) @ rng.normal(size=(rank, m)) + noise * rng.normal(size=(n, m))
    return X, (X[:, 0] > np.median(X[:, 0])).astype(np.int64)


def sanitizer(X, y):
    return Sanitizer(party_id="sanitizer", index=0, X=X, y=y, n_classes=2, run_id="t",
                     bounds=unit_bounds(X))


def test_inverse_pca_of_an_unnoised_full_release_is_exact():
    X, y = low_rank(300, 6, rank=6)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="pca-no-noise", s=6))
    np.testing.assert_allclose(reconstruct(msg), san.Z, atol=1e-12)
    assert average_privacy(reconstruct(msg), san.Z) < 1e-10


def test_pseudo_inverse_recovers_data_in_the_projection_span():
    rng = np.random.default_rng(1)
    R = rng.normal(size=(6, 3))
    Z = rng.normal(size=(50, 3)) @ R.T  # rows in the column space of R
    msg = Message("r", "pca-perturbation", 1, 0, "sanitizer", "miner", "release:rand-p",
                  {"data": Z @ R, "projection": R, "lower": np.zeros(6), "upper": np.ones(6),
                   "labels": np.zeros(50, dtype=np.int64)})
    np.testing.assert_allclose(reconstruct(msg), Z, atol=1e-10)
    assert len(filter_range(msg)) == 0


def test_filter_scan_matches_brute_force_reconstructions():
    X, _ = low_rank(500, 6, rank=3, noise=0.1, seed=2)
    rng = np.random.default_rng(3)
    noisy = X + rng.laplace(0, 0.5, X.shape)
    scan = pca_filter(noisy, X, s2_values=range(1, 7))
    mean = noisy.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov((noisy - mean).T, bias=True))
    basis = vecs[:, np.argsort(vals)[::-1]]
    brute = {}
    for s2 in range(1, 7):
        rec = mean + (noisy - mean) @ basis[:, :s2] @ basis[:, :s2].T
        brute[s2] = np.mean((rec - X) ** 2)
    for s2, mse in scan.mse:
        assert mse == pytest.approx(brute[s2], rel=1e-9)
    best = min(brute, key=brute.get)
    assert scan.best_s2 == best
    rec = mean + (noisy - mean) @ basis[:, :best] @ basis[:, :best].T
    assert scan.privacy == pytest.approx(average_privacy(rec, X), rel=1e-9)


def test_privacy_on_a_row_stride():
    X, _ = low_rank(500, 6, rank=3, noise=0.1, seed=2)
    noisy = X + np.random.default_rng(3).laplace(0, 0.5, X.shape)
    full = pca_filter(noisy, X, s2_values=range(1, 7))
    strided = pca_filter(noisy, X, s2_values=range(1, 7), max_rows=100)
    assert strided.best_s2 == full.best_s2 and strided.mse == full.mse
    mean = noisy.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov((noisy - mean).T, bias=True))
    basis = vecs[:, np.argsort(vals)[::-1]][:, : full.best_s2]
    rec = mean + (noisy - mean) @ basis @ basis.T
    assert strided.privacy == pytest.approx(average_privacy(rec[::5], X[::5]), rel=1e-9)


def test_correlation_attack_gains_much_without_pca_and_little_with_it():
    """Strongly correlated data: filtering removes No-PCA noise, not PCA-radius noise."""
    X, y = low_rank(4000, 10, rank=2, noise=0.02, seed=4)
    san = sanitizer(X, y)
    pca = attack(san.release(ReleaseRequest(scheme="pca-laplace", b=0.1, s=5, round=1)), san.Z)
    nopca = attack(san.release(ReleaseRequest(scheme="laplace", b=0.1, round=2)), san.Z)
    assert pca.filtered > 0.85 * pca.no_filter
    assert nopca.filtered < 0.6 * nopca.no_filter
    assert 1 <= pca.best_s2 <= 4 and 1 <= nopca.best_s2 <= 9


def test_allowed_s2_per_scheme():
    X, y = low_rank(200, 8, rank=8, noise=0.5)
    san = sanitizer(X, y)
    ranges = {"pca-laplace": range(1, 4), "laplace": range(1, 8), "rand-u": range(1, 9),
              "rand-n": range(1, 9)}
    params = {"pca-laplace": {"b": 0.2, "s": 4}, "laplace": {"b": 0.2},
              "rand-u": {"sd": 0.1}, "rand-n": {"sd": 0.1}}
    for i, (scheme, expected) in enumerate(ranges.items()):
        msg = san.release(ReleaseRequest(scheme=scheme, round=i + 1, **params[scheme]))
        assert filter_range(msg) == expected


def test_release_message_is_taken_from_the_view():
    X, y = low_rank(100, 4, rank=4, noise=0.5)
    san = sanitizer(X, y)
    a = san.release(ReleaseRequest(scheme="rand-n", sd=0.1, round=1))
    b = san.release(ReleaseRequest(scheme="rand-u", sd=0.1, round=2))
    view = View.of([a, b], "miner")
    assert release_message(view, 2).kind == "release:rand-u"
    assert release_message(view, 2).provenance == {}
    with pytest.raises(ProtocolError, match="expected one release in round 3"):
        release_message(view, 3)
    with pytest.raises(ProtocolError, match="found 0"):
        release_message(View.of([a], "sanitizer"), 1)


def test_bounds_outside_the_data_do_not_change_the_attack_scale():
    X, y = low_rank(300, 4, rank=4, noise=0.5, seed=5)
    wide = DomainBounds(X.min(axis=0) - 1.0, X.max(axis=0) + 1.0)
    san = Sanitizer(party_id="sanitizer", index=0, X=X, y=y, n_classes=2, run_id="t",
                    bounds=wide)
    msg = san.release(ReleaseRequest(scheme="pca-no-noise", s=4))
    np.testing.assert_allclose(reconstruct(msg), san.Z, atol=1e-12)
