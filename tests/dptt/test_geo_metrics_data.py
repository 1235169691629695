"""GEO (noise law, fairness rules), accuracy metrics, synthetic data, SNAP check-ins."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from scipy import stats

from ppknn.core.errors import DataError
from ppknn.protocols.dptt.data import (
    AUSTIN,
    SAN_FRANCISCO,
    SPAN,
    load_checkins,
    quantise,
    synthetic_points,
)
from ppknn.protocols.dptt.geo import Geo, geo_fairness
from ppknn.protocols.dptt.metrics import Truth, hits
from ppknn.protocols.dptt.neighbours import NeighbourIndex
from ppknn.protocols.dptt.variants import Variant

ALPHA = 1e-6


def test_geo_1d_is_laplace_with_scale_radius_over_epsilon():
    geo = Geo(epsilon=4.0, radius=1000.0)
    q = np.full((100_000, 1), 5.0)
    noise = (geo.perturb(q, np.random.default_rng(0)) - q).ravel()
    assert stats.kstest(noise, "laplace", args=(0, 250.0)).pvalue > ALPHA
    assert stats.kstest(noise, "laplace", args=(0, 250.0 * 1.3)).pvalue < ALPHA


def test_geo_2d_radius_is_gamma_2_with_scale_radius_over_epsilon():
    geo = Geo(epsilon=2.0, radius=500.0)  # ε = 0.004 per unit: E|noise| = 2 / ε = 500
    q = np.zeros((100_000, 2))
    r = np.linalg.norm(geo.perturb(q, np.random.default_rng(1)), axis=1)
    assert stats.kstest(r, "gamma", args=(2, 0, 250.0)).pvalue > ALPHA
    assert stats.kstest(r, "gamma", args=(2, 0, 250.0 * 1.3)).pvalue < ALPHA


@pytest.mark.parametrize(("label", "repeats", "nbh"), [
    ("basic", [1, 1], [1, 1]), ("N20", [1, 1], [20, 20]), ("E8", [1, 1], [200, 190]),
    ("P4", [200, 190], [1, 1]), ("GS", [200, 190], [1, 1]), ("GS-N5", [200, 190], [5, 5]),
])
def test_geo_fairness_rules(label, repeats, nbh):
    r, b = geo_fairness(Variant.parse(label), np.array([200, 190]))
    assert r.tolist() == repeats and b.tolist() == nbh


def test_geo_release_repeats_and_neighbourhoods():
    index = NeighbourIndex(np.arange(100.0))
    q = np.array([[10.0], [50.0], [90.0]])
    exact = Geo(epsilon=1e9, radius=1.0)  # negligible noise
    slots, ids = exact.release(index, q, np.random.default_rng(0), neighbourhood=[1, 3, 5])
    assert [sorted(ids[slots == i].tolist()) for i in range(3)] == [
        [10], [49, 50, 51], [88, 89, 90, 91, 92]]
    noisy = Geo(epsilon=1.0, radius=20.0)
    slots, ids = noisy.release(index, q, np.random.default_rng(0), repeats=[4, 1, 2])
    counts = np.bincount(slots, minlength=3)
    assert counts[1] == 1 and 1 <= counts[0] <= 4 and 1 <= counts[2] <= 2


def test_accuracy_counts_ties_and_top5():
    index = NeighbourIndex(np.array([[0.0], [2.0], [4.0], [6.0], [8.0], [10.0], [12.0]]))
    q = np.array([[1.0], [1.0], [1.0], [12.0]])
    truth = Truth.of(index, q)
    slots = np.array([0, 1, 2, 2, 3])
    ids = np.array([1, 4, 6, 5, 1])  # 2.0 ties with 0.0 for q = 1; 8.0 is 5th nearest
    nn, top5 = hits(index.points, q, truth, slots, ids)
    assert nn.tolist() == [True, False, False, False]
    assert top5.tolist() == [True, True, False, False]


def test_synthetic_normal_spans_zero_to_a_billion():
    x = synthetic_points(200_000, 1, np.random.default_rng(0)).ravel()
    assert x.min() >= 0 and x.max() <= SPAN
    law = stats.truncnorm(-3, 3, loc=SPAN / 2, scale=SPAN / 6)  # N(5e8, (1e9/6)^2) on [0, 1e9]
    assert stats.kstest(x, law.cdf).pvalue > ALPHA
    assert stats.kstest(x, stats.truncnorm(-3, 3, loc=SPAN / 2, scale=SPAN / 6 * 1.3).cdf
                        ).pvalue < ALPHA
    u = synthetic_points(1000, 2, np.random.default_rng(0), distribution="uniform")
    assert u.shape == (1000, 2) and stats.kstest(u[:, 0] / SPAN, "uniform").pvalue > ALPHA


SNAP_LINES = [
    "0\t2010-10-19T23:55:27Z\t30.2359091167\t-97.7951395833\t22847",
    "0\t2010-10-18T22:17:43Z\t30.2691029532\t-97.7493953705\t420315",
    "1\t2010-10-17T23:42:03Z\tnot-a-number\t-97.7\t1",
    "2\t2010-10-17T23:42:03Z\t37.7749\t-122.4194\t7",
    "3\tbroken line",
    "4\t2010-10-17T23:42:03Z\t37.7749\t-122.4193\t8",
    "5\t2010-10-17T23:42:03Z\t0.0\t0.0\t9",
]


@pytest.mark.parametrize("compressed", [False, True])
def test_snap_checkins_load_and_quantise(tmp_path, compressed):
    text = "\n".join(SNAP_LINES) + "\n"
    if compressed:
        path = tmp_path / "loc-gowalla_totalCheckins.txt.gz"
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path = tmp_path / "loc-brightkite_totalCheckins.txt"
        path.write_text(text)
    pts = load_checkins(path)
    assert pts.shape == (5, 2)  # bad number and broken line skipped
    sf = quantise(pts, SAN_FRANCISCO)
    assert sf.shape == (1, 2)  # the two SF check-ins share a 56 m x 60 m cell
    lat_cell = (37.7910 - 37.5395) / 500
    lon_cell = (122.5153 - 122.3789) / 200
    i, j = int((37.7749 - 37.5395) / lat_cell), int((-122.4194 + 122.5153) / lon_cell)
    assert sf[0] == pytest.approx([37.5395 + (i + 0.5) * lat_cell,
                                   -122.5153 + (j + 0.5) * lon_cell])
    assert quantise(pts, AUSTIN).shape == (2, 2)


def test_missing_checkin_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="no check-in file"):
        load_checkins(tmp_path / "absent.txt")
    with pytest.raises(DataError, match="no check-in lies in San Francisco"):
        quantise(np.array([[0.0, 0.0]]), SAN_FRANCISCO)
