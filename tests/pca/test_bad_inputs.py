"""Every rejected input of the PCA-perturbation protocol names the value and what is allowed."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.data import DomainBounds
from ppknn.core.errors import ConfigError, DataError, ProtocolError
from ppknn.protocols.pca_perturbation.datasets import load_paper_dataset
from ppknn.protocols.pca_perturbation.knn import radius_knn, select_k
from ppknn.protocols.pca_perturbation.parties.miner import Miner
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.protocol import MiningPlan
from ppknn.protocols.pca_perturbation.sanitize import distortion_statistics
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest

RNG = np.random.default_rng(0)
X4 = RNG.random((40, 4))
Y4 = np.arange(40) % 2
BOUNDS4 = DomainBounds(np.zeros(4), np.ones(4))


def sanitizer(X=X4, y=Y4, bounds=BOUNDS4, n_classes=2):
    return Sanitizer(party_id="sanitizer", index=0, X=X, y=y, n_classes=n_classes,
                     run_id="t", bounds=bounds)


def with_column(value, col=1):
    X = X4.copy()
    X[:, col] = value
    return X


def rank_two():
    return RNG.random((40, 2)) @ np.array([[1.0, 0.0, 1.0, 0.5], [0.0, 1.0, 0.5, 1.0]]) / 2


REQUESTS = [
    (dict(scheme="pca-laplace", b=0, s=2), "b must be a finite number > 0, got 0"),
    (dict(scheme="pca-laplace", b=-0.1, s=2), "b must be a finite number > 0, got -0.1"),
    (dict(scheme="pca-laplace", b=float("nan"), s=2), "b must be a finite number > 0, got nan"),
    (dict(scheme="pca-laplace", b=float("inf"), s=2), "b must be a finite number > 0, got inf"),
    (dict(scheme="pca-laplace", b="0.3", s=2), "b must be a real number > 0, got str '0.3'"),
    (dict(scheme="pca-laplace", b=True, s=2), "b must be a real number > 0, got bool True"),
    (dict(scheme="laplace", b=0.0), "b must be a finite number > 0, got 0.0"),
    (dict(scheme="pca-laplace", s=2), "scheme 'pca-laplace' needs parameter 'b'"),
    (dict(scheme="pca-laplace", b=0.3), "scheme 'pca-laplace' needs parameter 's'"),
    (dict(scheme="rand-u", sd=0.1, b=0.3), "scheme 'rand-u' does not take parameter 'b'"),
    (dict(scheme="rand-n", sd=0), "sd must be a finite number > 0, got 0"),
    (dict(scheme="dct", b=0.3), "unknown release scheme 'dct'; allowed: ['pca-laplace'"),
    (dict(scheme="rand-p", k=2, round=0), "round must be an integer >= 1, got 0"),
    (dict(scheme="pca-laplace", b=0.3, s=2, n_sd=-1.0), "n_sd must be a finite number >= 0"),
]


@pytest.mark.parametrize("kwargs, message", REQUESTS)
def test_bad_release_requests(kwargs, message):
    with pytest.raises(ConfigError) as err:
        ReleaseRequest(**kwargs)
    assert message in str(err.value)


RELEASES = [
    (dict(scheme="pca-laplace", b=0.3, s=0), "s must be in [1, 4] (the number of attributes), "
                                             "got 0"),
    (dict(scheme="pca-laplace", b=0.3, s=5), "s must be in [1, 4] (the number of attributes), "
                                             "got 5"),
    (dict(scheme="pca-no-noise", s=2.5), "s must be an integer in [1, 4], got float 2.5"),
    (dict(scheme="rand-p", k=4), "Rand-P needs k in [1, 3] (fewer columns than the 4 "
                                 "attributes), got 4"),
    (dict(scheme="rand-p", k=0), "Rand-P needs k in [1, 3]"),
]


@pytest.mark.parametrize("kwargs, message", RELEASES)
def test_bad_release_parameters_for_the_data(kwargs, message):
    with pytest.raises(ConfigError) as err:
        sanitizer().release(ReleaseRequest(**kwargs))
    assert message in str(err.value)


def test_more_components_than_the_data_spans():
    san = sanitizer(X=rank_two(), bounds=None)
    with pytest.raises(ConfigError, match=r"principal component 3 has range .* spans only 2 "
                                          r"dimension\(s\)\); choose s <= 2"):
        san.release(ReleaseRequest(scheme="pca-laplace", b=0.3, s=3))


SANITIZERS = [
    (dict(X=with_column(0.5)), DataError, "column 1 is constant (every value is 0.5"),
    (dict(X=with_column(np.nan, 2)), DataError, "features must be finite; found nan at row 0, "
                                                "column 2"),
    (dict(X=with_column(np.inf, 0)), DataError, "found inf at row 0, column 0"),
    (dict(X=X4[:1]), DataError, "a 2-D array with >= 2 rows"),
    (dict(y=Y4[:-1]), DataError, "labels must be 40 integers, got shape (39,)"),
    (dict(y=Y4 + 0.5), DataError, "labels must be 40 integers"),
    (dict(y=Y4 + 1), DataError, "labels must be in [0, 2), got [1, 2]"),
    (dict(bounds=DomainBounds(np.zeros(3), np.ones(3))), ConfigError,
     "bounds for 3 attributes, data has 4"),
    (dict(bounds=DomainBounds(np.zeros(4), np.array([1.0, 0.0, 1.0, 1.0]))), ConfigError,
     "declared bounds of attribute 1 have zero width"),
    (dict(bounds=DomainBounds(np.zeros(4), np.full(4, 0.5))), DataError,
     "outside the declared domain"),
]


@pytest.mark.parametrize("kwargs, error, message", SANITIZERS)
def test_bad_sanitizer_inputs(kwargs, error, message):
    with pytest.raises(error) as err:
        sanitizer(**kwargs)
    assert message in str(err.value)


def test_the_miner_rejects_bad_instances_and_releases():
    with pytest.raises(DataError, match="features must be finite"):
        Miner(party_id="miner", index=1, X=with_column(np.nan), n_classes=2, run_id="t")
    miner = Miner(party_id="miner", index=1, X=RNG.random((5, 3)), n_classes=2, run_id="t")
    with pytest.raises(ProtocolError, match="no release received yet"):
        miner.classify(MiningPlan())
    release = sanitizer().release(ReleaseRequest(scheme="rand-u", sd=0.1))
    with pytest.raises(ProtocolError, match="release has 4 attributes, my instances have 3"):
        miner.receive(release)
    miner4 = Miner(party_id="miner", index=1, X=RNG.random((5, 4)), n_classes=2, run_id="t")
    miner4.receive(release)
    with pytest.raises(ConfigError, match="publishes no distortion statistics"):
        miner4.classify(MiningPlan(methods=("radius",)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(methods=("radius", "svm")), "methods must be a non-empty subset of ['radius'"),
    (dict(methods=()), "methods must be a non-empty subset"),
    (dict(k=0), "k must be an integer >= 1, got 0"),
    (dict(folds=1), "folds must be an integer >= 2, got 1"),
    (dict(ks=(3, -1)), "every k in ks must be an integer >= 1, got -1"),
    (dict(max_validation=3), "max_validation must be an integer >= 5, got 3"),
])
def test_bad_mining_plans(kwargs, message):
    with pytest.raises(ConfigError) as err:
        MiningPlan(**kwargs)
    assert message in str(err.value)


def test_bad_classifier_arguments():
    X, y = RNG.random((20, 2)), np.arange(20) % 2
    with pytest.raises(ConfigError, match="radius2 must be finite, got nan"):
        radius_knn(X, y, X, radius2=float("nan"), n_classes=2)
    with pytest.raises(ConfigError, match="labels must be 20 integers in \\[0, 1\\)"):
        radius_knn(X, y, X, radius2=1.0, n_classes=1)
    with pytest.raises(ConfigError, match="the same number of columns"):
        radius_knn(X, y, RNG.random((3, 3)), radius2=1.0, n_classes=2)
    with pytest.raises(ConfigError, match="folds must be an integer in \\[2, 20\\], got 1"):
        select_k(X, y, n_classes=2, rng=np.random.default_rng(0), folds=1)
    with pytest.raises(ConfigError, match="no k in \\(50,\\) fits a training fold of 16 rows"):
        select_k(X, y, n_classes=2, rng=np.random.default_rng(0), ks=(50,))
    with pytest.raises(ConfigError, match="2 kept variances but 1 noise scales"):
        distortion_statistics(kept_variances=np.ones(2), scales=np.ones(1),
                              dropped_variances=np.ones(0))


def test_unavailable_datasets_say_so():
    with pytest.raises(DataError, match="'pendigits' is not available offline"):
        load_paper_dataset("pendigits", rng=np.random.default_rng(0))
    with pytest.raises(DataError, match="unknown dataset 'mnist'"):
        load_paper_dataset("mnist", rng=np.random.default_rng(0))
