"""The paper's datasets: waveform-21 and the 10-cluster generator, constant columns."""

from __future__ import annotations

import numpy as np
from scipy import stats

from ppknn.protocols.pca_perturbation.datasets import (
    gaussian_clusters,
    load_paper_dataset,
    waveform21,
    waveform_bases,
)

Z_CRIT = 4.89  # two-sided alpha = 1e-6


def test_waveform_bases_are_breimans_triangles():
    h1, h2, h3 = waveform_bases()
    np.testing.assert_array_equal(h1, [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 0, 0, 0,
                                       0, 0])
    np.testing.assert_array_equal(h2[4:], h1[:-4])   # h2(i) = h1(i - 4)
    np.testing.assert_array_equal(h3[:-4], h1[4:])   # h3(i) = h1(i + 4)
    assert h2.argmax() == 14 and h3.argmax() == 6


def test_waveform_class_means_and_balance():
    X, y = waveform21(30_000, np.random.default_rng(0))
    assert stats.chisquare(np.bincount(y, minlength=3)).pvalue > 1e-6
    h = waveform_bases()
    for c, (a, b) in enumerate(((0, 1), (0, 2), (1, 2))):
        rows = X[y == c]
        expected = 0.5 * (h[a] + h[b])  # E(u) = 1/2
        # Var = Var(u) (h_a - h_b)^2 + 1 per attribute
        sd = np.sqrt((h[a] - h[b]) ** 2 / 12 + 1) / np.sqrt(len(rows))
        assert np.all(np.abs(rows.mean(axis=0) - expected) / sd < Z_CRIT)
    # power: the means of class 0 are not those of class 1
    assert np.any(np.abs(X[y == 0].mean(axis=0) - 0.5 * (h[0] + h[2])) > 0.5)


def test_gaussian_clusters():
    X, y = gaussian_clusters(5000, 8, n_clusters=10, sd=2.0, rng=np.random.default_rng(1))
    assert X.shape == (5000, 8) and np.bincount(y).tolist() == [500] * 10
    within = np.concatenate([X[y == c] - X[y == c].mean(axis=0) for c in range(10)])
    assert abs(within.std() - 2.0) < 0.05
    centres = np.array([X[y == c].mean(axis=0) for c in range(10)])
    assert centres.min() > -5.5 and centres.max() < 5.5
    again, _ = gaussian_clusters(5000, 8, n_clusters=10, sd=2.0, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(X, again)


def test_ionosphere_drops_its_constant_column(paper_sets):
    ds = paper_sets["ionosphere"]
    assert ds.dropped == ("a02",) and ds.X.shape == (351, 33)
    assert np.all(np.ptp(ds.X, axis=0) > 0)
    wdbc = load_paper_dataset("wdbc", rng=np.random.default_rng(0))
    assert wdbc.X.shape == (569, 30) and wdbc.dropped == ()
