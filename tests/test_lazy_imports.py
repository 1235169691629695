"""Loading the quickstart's data (scikit-learn's bundled sets) or a shipped CSV imports no
scikit-learn, and gives the arrays scikit-learn's own loaders give."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ppknn.core import data as data_mod
from ppknn.core.data import SKLEARN_DATASETS, load_dataset

ROOT = Path(__file__).resolve().parents[1]

# sha256 over dtype, shape and bytes of X and y, the classes and the feature names,
# recorded with the loader that imported scikit-learn (scikit-learn 1.9.1)
DIGESTS = {
    "iris": ((150, 4), "7c947d132e2da67775a99520a433e9fc3245ec4b0cb5eb30bc146edb1b013227"),
    "wine": ((178, 13), "3120c5e4090a736d4a971a1885954ff2c592208ed2652c15b1845e5f32aeb9d5"),
    "breast_cancer": ((569, 30),
                      "499aa049f86b6ca318b430767566a111913efc07da2d5116f6c0fb261d685a22"),
    "digits": ((1797, 64), "a099d6ea196f8daf724a0227eea8433ddebde1d0ca50cc821e462cc6aed1bacc"),
}

CHILD = """
import hashlib, json, sys
from ppknn.core.data import load_dataset
out = {}
for name in sys.argv[1:]:
    d = load_dataset(name)
    h = hashlib.sha256()
    for a in (d.X, d.y):
        h.update(str(a.dtype).encode()); h.update(str(a.shape).encode()); h.update(a.tobytes())
    h.update(repr(d.classes.tolist()).encode()); h.update(str(d.classes.dtype).encode())
    h.update(repr(d.feature_names).encode())
    out[name] = [list(d.X.shape), h.hexdigest()]
out["sklearn_imported"] = sorted(m for m in sys.modules if m.split(".")[0] == "sklearn")
print(json.dumps(out))
"""


def _fresh(*names: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", CHILD, *names], capture_output=True,
                          text=True, env=env, cwd=str(ROOT), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _quickstart_dataset() -> str:
    import tomllib

    scenario = tomllib.loads((ROOT / "simulations" / "quickstart.toml").read_text())
    return scenario["data"]["dataset"]


def test_quickstart_and_shipped_csv_load_without_sklearn():
    quick = _quickstart_dataset()
    got = _fresh(quick, "pima", *(f"sklearn:{n}" for n in SKLEARN_DATASETS))
    assert got.pop("sklearn_imported") == []
    for name in SKLEARN_DATASETS:
        shape, digest = DIGESTS[name]
        assert got[f"sklearn:{name}"] == [list(shape), digest], name
    assert got["pima"][0] == [768, 8]
    assert quick in got


@pytest.mark.parametrize("name", SKLEARN_DATASETS)
def test_bundled_sets_equal_sklearn_loaders(name, monkeypatch):
    fast = load_dataset(f"sklearn:{name}")
    monkeypatch.setattr(data_mod, "_read_sklearn_files", lambda _name: None)
    slow = load_dataset(f"sklearn:{name}")  # through scikit-learn's loader
    assert fast.X.dtype == slow.X.dtype == np.float64
    assert fast.X.tobytes() == slow.X.tobytes() and fast.X.shape == slow.X.shape
    assert np.array_equal(fast.y, slow.y) and fast.y.dtype == slow.y.dtype
    assert fast.classes.dtype == slow.classes.dtype
    assert fast.classes.tolist() == slow.classes.tolist()
    assert fast.feature_names == slow.feature_names


def test_bundled_set_falls_back_to_sklearn_when_its_file_is_elsewhere(monkeypatch):
    monkeypatch.setattr(data_mod, "SKLEARN_FILES", {**data_mod.SKLEARN_FILES,
                                                   "iris": "no-such-file.csv"})
    assert _digest(load_dataset("sklearn:iris")) == DIGESTS["iris"][1]


def _digest(ds) -> str:
    """The digest ``CHILD`` computes, in this interpreter."""
    h = hashlib.sha256()
    for a in (ds.X, ds.y):
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    h.update(repr(ds.classes.tolist()).encode())
    h.update(str(ds.classes.dtype).encode())
    h.update(repr(ds.feature_names).encode())
    return h.hexdigest()
