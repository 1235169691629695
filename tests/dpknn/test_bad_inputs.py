"""Every rejected input gets a ConfigError naming the value and what is allowed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppknn.core.data import DomainBounds
from ppknn.core.errors import ConfigError, DataError
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import classify_knn
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.protocol import Query
from ppknn.protocols.dp_knn.rn import classify_rn
from tests.dpknn.conftest import owner_kwargs

X = np.random.default_rng(0).random((50, 2))
Y = (X[:, 0] > 0.5).astype(np.int64)
INDEX = LabelIndex(X, Y, n_classes=2)
XQ = np.random.default_rng(1).random((5, 2))
BOUNDS = DomainBounds(np.zeros(2), np.ones(2))
RNG = np.random.default_rng(2)


def _rn(**kw):
    args = dict(x=XQ, r=0.2, algorithm="proposed", epsilon=1.0, rng=RNG) | kw
    return classify_rn(INDEX, args.pop("x"), args.pop("r"), **args)


def _knn(**kw):
    args = dict(x=XQ, k=3, algorithm="interactive", epsilon=1.0, rng=RNG, bounds=BOUNDS) | kw
    return classify_knn(INDEX, args.pop("x"), args.pop("k"), **args)


CASES = [
    ("radius zero", lambda: _rn(r=0.0), r"radius must be a finite number > 0.*got 0\.0"),
    ("radius negative", lambda: _rn(r=[0.1, 0.1, -2.0, 0.1, 0.1]), r"got -2\.0 at index 2"),
    ("radius nan", lambda: _rn(r=math.nan), r"radius must be a finite number > 0"),
    ("radius shape", lambda: _rn(r=[0.1, 0.2]), r"radius must be a scalar or have shape \(5,\)"),
    ("k zero", lambda: _knn(k=0), r"k must be an integer >= 1.*got 0"),
    ("k negative vector", lambda: _knn(k=[3, 3, -1, 3, 3]), r"got -1 at index 2"),
    ("k fractional", lambda: _knn(k=2.5), r"k must be a whole number >= 1, got 2\.5"),
    ("dimension", lambda: _rn(x=np.zeros((5, 3))), r"3 features, the training data has 2"),
    ("dimension knn", lambda: _knn(x=np.zeros((4, 1))), r"1 features, the training data has 2"),
    ("no instances", lambda: _rn(x=np.zeros((0, 2))), r"shape \(Q, D\) with Q >= 1"),
    ("nan instance", lambda: _rn(x=np.array([[0.1, math.nan]])), r"finite, got nan at row 0"),
    ("epsilon zero", lambda: _rn(epsilon=0.0), r"epsilon must be a number > 0.*got 0\.0"),
    ("epsilon negative", lambda: _knn(epsilon=-1.0), r"epsilon must be a number > 0.*got -1\.0"),
    ("w zero", lambda: _knn(weight=0.0), r"weight w must be in the open interval \(0, 1\), got 0"),
    ("w one", lambda: _knn(weight=1.0), r"weight w must be in the open interval \(0, 1\), got 1"),
    ("w above", lambda: _knn(weight=1.5), r"\(0, 1\), got 1\.5"),
    ("w negative", lambda: _knn(weight=-0.2), r"\(0, 1\), got -0\.2"),
    ("unknown rn algorithm", lambda: _rn(algorithm="smart"), r"unknown r-N algorithm 'smart'"),
    ("unknown knn algorithm", lambda: _knn(algorithm="x"), r"unknown k-NN algorithm 'x'"),
    ("training label outside", lambda: LabelIndex(X, Y + 1, n_classes=2),
     r"training label 2 is not in the label set 0\.\.1"),
    ("owner unknown label", lambda: DPOwner(**owner_kwargs() | {"classes": ["forged", "x"]}),
     r"label 'genuine' is not in the declared label set \['forged', 'x'\]"),
    ("owner repeated labels", lambda: DPOwner(**owner_kwargs() | {"classes": ["a", "a"]}),
     r"label set has repeated values"),
    ("owner epsilon", lambda: DPOwner(**owner_kwargs(epsilon=0.0)),
     r"epsilon budget must be a finite number > 0, got 0"),
    ("query epsilon infinite", lambda: Query(task="rn", algorithm="proposed", x=XQ, radius=0.1,
                                             epsilon=math.inf), r"epsilon must be"),
    ("query w", lambda: Query(task="knn", algorithm="noninteractive", x=XQ, k=3, epsilon=1.0,
                              weight=1.0), r"weight w must be in the open interval"),
    ("query task", lambda: Query(task="svm", algorithm="proposed", x=XQ, epsilon=1.0),
     r"unknown task 'svm'"),
    ("query k for rn", lambda: Query(task="rn", algorithm="proposed", x=XQ, k=3, epsilon=1.0),
     r"an r-N query takes a radius, not k"),
]


@pytest.mark.parametrize(("name", "call", "message"), CASES, ids=[c[0] for c in CASES])
def test_rejected(name, call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_owner_rejects_wrong_dimension_before_spending():
    owner = DPOwner(**owner_kwargs())
    q = Query(task="rn", algorithm="proposed", x=np.zeros((3, 5)), radius=0.1, epsilon=0.5)
    with pytest.raises(ConfigError, match="5 features, the training data has 2"):
        owner.answer(q.to_message(run_id="run", sender="a", receiver="owner", request=0))
    assert owner.ledger.entries == ()


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="k must be an integer"):
        _knn(k="5")
    with pytest.raises(TypeError, match="test instances must be a numeric"):
        _rn(x="points")


def test_owner_rejects_training_rows_outside_the_declared_domain():
    with pytest.raises(DataError, match=r"feature 0 is outside the declared domain \[0\.0, 0\.5\]"):
        DPOwner(**owner_kwargs() | {"upper": [0.5, 1.0]})
