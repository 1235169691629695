"""The sanitizer: PCA, Laplace noise per component, amplification, release schemes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.decomposition import PCA

from ppknn.core.messages import PUBLIC
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.privacy import amplification_bound
from ppknn.protocols.pca_perturbation.sanitize import distortion_statistics, fit_pca, normalise
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest, miner_features
from tests.pca.conftest import unit_bounds

ALPHA = 1e-6
PAPER = ("wine", "iris", "ionosphere", "wdbc", "waveform", "synthetic-2", "synthetic-8")


def correlated(n, m, seed=0):
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 3))
    X = latent @ rng.normal(size=(3, m)) + 0.3 * rng.normal(size=(n, m))
    return X, (latent[:, 0] > 0).astype(np.int64)


def sanitizer(X, y, n_classes=2, seed=0):
    return Sanitizer(party_id="sanitizer", index=0, X=X, y=y, n_classes=n_classes,
                     run_id="t", bounds=unit_bounds(X), seed=seed)


def test_pca_matches_scikit_learn():
    X, _ = correlated(400, 6)
    Z = normalise(X, X.min(axis=0), X.max(axis=0))
    fit = fit_pca(Z)
    ref = PCA().fit(Z)
    n = len(Z)
    np.testing.assert_allclose(fit.variances, ref.explained_variance_ * (n - 1) / n, rtol=1e-9)
    signs = np.sign(np.sum(fit.components * ref.components_, axis=1))
    np.testing.assert_allclose(fit.components, ref.components_ * signs[:, None], atol=1e-9)
    np.testing.assert_allclose(fit.components @ fit.components.T, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(fit.scores(Z) @ fit.components + fit.mean, Z, atol=1e-12)
    np.testing.assert_allclose(np.cov(fit.scores(Z).T, bias=True), np.diag(fit.variances),
                               atol=1e-12)


def test_normalise_maps_the_bounds_to_the_unit_interval():
    X = np.array([[2.0, -1.0], [4.0, 3.0], [3.0, 1.0]])
    Z = normalise(X, np.array([2.0, -1.0]), np.array([4.0, 3.0]))
    np.testing.assert_array_equal(Z, [[0.0, 0.0], [1.0, 1.0], [0.5, 0.5]])


@pytest.mark.parametrize("b", [0.25, 0.3])
@pytest.mark.parametrize("name", PAPER)
def test_amplification_is_e_to_the_one_over_b_on_every_dataset(paper_sets, name, b):
    ds = paper_sets[name]
    san = sanitizer(ds.X, ds.y, ds.n_classes)
    s = ds.X.shape[1] // 2
    msg = san.release(ReleaseRequest(scheme="pca-laplace", b=b, s=s))
    clean = san.fit.scores(san.Z, s)
    ranges = clean.max(axis=0) - clean.min(axis=0)
    np.testing.assert_array_equal(san.private[1]["ranges"], ranges)
    np.testing.assert_allclose(san.private[1]["scales"], b * ranges, rtol=1e-15)
    assert msg.payload["amplification"].shape == (s,)
    np.testing.assert_allclose(msg.payload["amplification"], math.exp(1 / b), rtol=1e-13)
    np.testing.assert_array_equal(san.guarantee(b, s).amplification,
                                  msg.payload["amplification"])


def test_amplification_values_pinned():
    assert amplification_bound(0.25) == math.exp(4.0)
    assert amplification_bound(0.25) == pytest.approx(54.598150033, abs=1e-9)
    assert amplification_bound(0.3) == pytest.approx(28.031624895, abs=1e-9)


def test_domain_amplification_is_at_least_the_data_amplification():
    X, y = correlated(300, 5)
    g = sanitizer(X, y).guarantee(0.3, 3)
    assert np.all(g.domain_amplification >= g.amplification * (1 - 1e-12))


def test_noise_is_laplace_with_scale_b_times_range():
    X, y = correlated(20_000, 6, seed=1)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="pca-laplace", b=0.3, s=4))
    z = ((msg.payload["scores"] - san.fit.scores(san.Z, 4)) / san.private[1]["scales"]).ravel()
    assert stats.kstest(z, stats.laplace.cdf).pvalue > ALPHA
    # power: a sanitizer whose scale were 30% off would be rejected
    assert stats.kstest(z * 1.3, stats.laplace.cdf).pvalue < ALPHA
    assert stats.kstest(z / 1.3, stats.laplace.cdf).pvalue < ALPHA


def test_no_pca_laplace_noise_per_attribute():
    X, y = correlated(20_000, 4, seed=2)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="laplace", b=0.2))
    scales = 0.2 * (san.Z.max(axis=0) - san.Z.min(axis=0))
    np.testing.assert_allclose(san.private[1]["scales"], scales, rtol=1e-15)
    z = ((msg.payload["data"] - san.Z) / scales).ravel()
    assert stats.kstest(z, stats.laplace.cdf).pvalue > ALPHA
    assert stats.kstest(z * 1.3, stats.laplace.cdf).pvalue < ALPHA


@pytest.mark.parametrize("scheme, law", [("rand-u", stats.uniform(-math.sqrt(3), 2 * math.sqrt(3))),
                                         ("rand-n", stats.norm())])
def test_additive_baselines_have_the_declared_standard_deviation(scheme, law):
    X, y = correlated(20_000, 4, seed=3)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme=scheme, sd=0.25))
    z = ((msg.payload["data"] - san.Z) / 0.25).ravel()
    assert stats.kstest(z, law.cdf).pvalue > ALPHA
    assert stats.kstest(z * 1.3, law.cdf).pvalue < ALPHA


def test_random_projection_release():
    X, y = correlated(5_000, 8, seed=4)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="rand-p", k=4))
    R = msg.payload["projection"]
    assert R.shape == (8, 4)
    np.testing.assert_allclose(msg.payload["data"], san.Z @ R, rtol=1e-12)
    # entries are N(0, 1/k): k * R is standard normal
    assert stats.kstest((R * 2.0).ravel(), stats.norm.cdf).pvalue > ALPHA


def test_published_distortion_statistics_are_eqs_12_and_13():
    X, y = correlated(500, 6, seed=5)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="pca-laplace", b=0.2, s=2, n_sd=2.0))
    ref = distortion_statistics(kept_variances=san.fit.variances[:2],
                                scales=san.private[1]["scales"],
                                dropped_variances=san.fit.variances[2:])
    np.testing.assert_array_equal(msg.payload["stats"], [ref.mean, ref.variance, 2.0])
    b, v = san.private[1]["scales"], san.fit.variances
    assert ref.mean == pytest.approx(2 * np.sum(b**2) - 2 * np.sum(v[2:]), rel=1e-14)
    assert ref.variance == pytest.approx(16 * np.sum(b**2 * v[:2]) + 20 * np.sum(b**4)
                                         + 8 * np.sum(v[2:] ** 2), rel=1e-14)
    assert ref.radius2 == ref.mean + 2 * math.sqrt(ref.variance)


def test_no_noise_release_is_the_exact_projection():
    X, y = correlated(300, 5, seed=6)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="pca-no-noise", s=3))
    np.testing.assert_array_equal(msg.payload["scores"], san.fit.scores(san.Z, 3))
    assert msg.payload["stats"][0] == pytest.approx(-2 * np.sum(san.fit.variances[3:]))


def test_test_points_are_projected_not_noised():
    X, y = correlated(300, 5, seed=7)
    san = sanitizer(X, y)
    msg = san.release(ReleaseRequest(scheme="pca-laplace", b=0.3, s=3))
    Zq = normalise(X[:10], san.lower, san.upper)
    train, queries = miner_features(msg.kind, dict(msg.payload), Zq)
    np.testing.assert_array_equal(train, msg.payload["scores"])
    np.testing.assert_allclose(queries, san.fit.scores(Zq, 3), rtol=1e-12)


def test_releases_repeat_with_the_seed_and_differ_with_another():
    X, y = correlated(200, 4, seed=8)
    req = ReleaseRequest(scheme="pca-laplace", b=0.3, s=2)
    a = sanitizer(X, y, seed=5).release(req).payload["scores"]
    b = sanitizer(X, y, seed=5).release(req).payload["scores"]
    c = sanitizer(X, y, seed=6).release(req).payload["scores"]
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_each_round_has_its_own_stream_whatever_the_order():
    X, y = correlated(200, 4, seed=9)
    r1 = ReleaseRequest(scheme="pca-laplace", b=0.3, s=2, round=1)
    r2 = ReleaseRequest(scheme="rand-n", sd=0.1, round=2)
    first = sanitizer(X, y)
    a1, a2 = first.release(r1), first.release(r2)
    second = sanitizer(X, y)
    b2, b1 = second.release(r2), second.release(r1)
    np.testing.assert_array_equal(a1.payload["scores"], b1.payload["scores"])
    np.testing.assert_array_equal(a2.payload["data"], b2.payload["data"])


def test_release_message_and_provenance():
    X, y = correlated(100, 4, seed=10)
    msg = sanitizer(X, y).release(ReleaseRequest(scheme="pca-laplace", b=0.3, s=2, round=3))
    assert (msg.sender, msg.receiver, msg.round, msg.kind) == ("sanitizer", "miner", 3,
                                                               "release:pca-laplace")
    assert set(msg.payload) == {"scores", "labels", "lower", "upper", "mean", "components",
                                "stats", "b", "amplification"}
    assert set(msg.provenance) == set(msg.payload)
    assert int(msg.provenance["b"].ravel()[0]) == PUBLIC
    assert int(msg.provenance["scores"].ravel()[0]) == 0
    np.testing.assert_array_equal(msg.payload["labels"], y)
