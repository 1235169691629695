"""Every rejected input, its error type and a message naming the value and what is allowed."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.data import AUSTIN, quantise, synthetic_points
from ppknn.protocols.dptt.geo import Geo
from ppknn.protocols.dptt.parties.dptt_server import DPTTServer
from ppknn.protocols.dptt.traversal import ServerTraversal
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import Variant
from ppknn_reproductions.experiments.dptt_session import DPTTSession

POINTS = np.random.default_rng(0).normal(size=(100, 2))  # height 7


def _session_run(queries, setup):
    with DPTTSession(points=POINTS, record=False) as s:
        s.run(queries, setup)


CMP1 = dict(utility=Utility.cmp(), epsilon=1.0)
CASES = [
    ("empty dataset", lambda: ModifiedKDTree.build(np.zeros((0, 2))), "is empty"),
    ("empty 1-D dataset", lambda: DPTTServer(run_id="r", points=[]), "is empty"),
    ("NaN in the data", lambda: ModifiedKDTree.build([[0.0, np.nan]]), "must be finite"),
    ("3-D array data", lambda: ModifiedKDTree.build(np.zeros((2, 2, 2))), r"shape \(N, k\)"),
    ("query of the wrong dimension",
     lambda: _session_run(np.zeros((5, 3)), DPTTSetup(variant="basic", **CMP1)),
     r"shape \(Q, 2\).*got shape \(5, 3\)"),
    ("no queries", lambda: _session_run(np.zeros((0, 2)), DPTTSetup(variant="basic", **CMP1)),
     r"Q >= 1"),
    ("query of the wrong dimension, plain descent",
     lambda: ModifiedKDTree.build(POINTS).descend(np.zeros((1, 1))), r"shape \(Q, 2\)"),
    ("epsilon zero", lambda: DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=0.0),
     "epsilon must be a finite number > 0, got 0.0"),
    ("epsilon negative", lambda: DPTTSetup(variant="E2", utility=Utility.cmp(), epsilon=-1),
     "epsilon must be a finite number > 0, got -1"),
    ("s beyond the height (E)",
     lambda: _session_run(POINTS[:3], DPTTSetup(variant="E8", **CMP1)),
     "s=8 is beyond the tree height 7"),
    ("s beyond the height (P)",
     lambda: ServerTraversal(ModifiedKDTree.build(POINTS), Variant.parse("P9"), 1),
     "s=9 is beyond the tree height 7"),
    ("B < 1", lambda: Variant(kind="N", b=0), "neighbourhood size B must be >= 1, got 0"),
    ("B < 1 in a label", lambda: Variant.parse("GS-N0"), "B must be >= 1, got 0"),
    ("negative s", lambda: Variant(kind="E", s=-1), "s must be >= 0, got -1"),
    ("unknown variant", lambda: Variant.parse("X3"), "unknown DP-TT variant 'X3'; allowed"),
    ("unknown variant kind", lambda: Variant(kind="backtrack"), "allowed: \\['basic'"),
    ("number on basic", lambda: Variant.parse("basic3"), "takes no number"),
    ("missing number", lambda: Variant.parse("E"), "needs a number"),
    ("split count on GS", lambda: Variant(kind="GS", s=2), "takes no split count"),
    ("unknown utility", lambda: Utility(name="angle"), "unknown utility 'angle'"),
    ("CMP sensitivity", lambda: Utility(name="cmp", sensitivity=2.0), "sensitivity 1"),
    ("DIS radius zero", lambda: Utility.dis(0.0), "sensitivity must be a finite number > 0"),
    ("utility not an object", lambda: DPTTSetup(variant="basic", utility="cmp", epsilon=1.0),
     r"Utility.cmp\(\) or Utility.dis\(radius\)"),
    ("delta out of range", lambda: DPTTSetup(variant="basic", delta=1.5, **CMP1),
     r"delta must be in \[0, 1\)"),
    ("GEO in 3-D", lambda: Geo(epsilon=1.0, radius=1.0).perturb(np.zeros((1, 3)), None),
     "1-D or 2-D"),
    ("GEO radius", lambda: Geo(epsilon=1.0, radius=-5.0), "radius must be a finite number > 0"),
    ("server without data", lambda: DPTTServer(run_id="r"), "either points or a prebuilt tree"),
    ("synthetic distribution", lambda: synthetic_points(5, 1, np.random.default_rng(0),
                                                         distribution="beta"),
     "distribution must be one of"),
    ("quantisation grid", lambda: quantise(np.zeros((1, 2)), AUSTIN, cells=(0, 5)),
     "cells must be"),
]


@pytest.mark.parametrize(("what", "call", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_config_error(what, call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError):
        DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon="1")
    with pytest.raises(ConfigError, match="s must be an integer"):
        Variant(kind="E", s=2.5)


def test_wrong_number_of_bits_is_a_protocol_error():
    walk = ServerTraversal(ModifiedKDTree.build(POINTS), Variant.parse("basic"), 4)
    with pytest.raises(ProtocolError, match="expected 4 bits"):
        walk.apply(np.zeros(3, dtype=np.uint8))
    with pytest.raises(ProtocolError, match="0 \\(left\\) or 1 \\(right\\)"):
        walk.apply(np.full(4, 2, dtype=np.uint8))
    with pytest.raises(ProtocolError, match="not finished"):
        walk.release()
