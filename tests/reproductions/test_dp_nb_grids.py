"""``dp-nb`` as the Zafarani reproduction runs it: stratified folds, training-row bounds,
δ from the training size, and grid rows against the study loop."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.errors import PrivacyLeakWarning
from ppknn.core.rng import SeedPolicy
from ppknn.protocols.dp_nb.datasets import load_nb_dataset
from ppknn.simulations.prepare import kfold, prepare_data, stratified_kfold
from ppknn.simulations.runner import execute, prepare
from ppknn.simulations.scenario import parse_scenario
from ppknn_reproductions.experiments.dp_nb import fold_splits, split_seed
from ppknn_reproductions.experiments.zafarani import (
    METHODS,
    SEED,
    Settings,
    accuracy,
    accuracy_grids,
    accuracy_study,
)
from tests.plugins.equivalence import assert_refused


def seeds_scenario(**data) -> dict:
    return {"run": {"name": "seeds-cv", "seed": 4},
            "data": {"dataset": "seeds", "bounds": "data", **data},
            "parties": {"n": 1, "analysts": 1}, "runtime": {"kind": "inprocess"},
            "protocol": {"name": "dp-nb", "epsilon": 1.0, "neighbours": "replace"}}


@pytest.mark.parametrize("name", ["glass", "seeds"])
def test_stratified_folds_are_the_experiments_folds(name):
    """``[data] stratify = true`` with split_seed = SEED + rep cuts the study's folds
    (glass has a class of 9 rows, fewer than 10 folds)."""
    ds = load_nb_dataset(name)
    for rep in (0, 1):
        study = fold_splits(ds, 10, rep, SeedPolicy(root=SEED), True)
        for fold, (tr, te) in enumerate(study):
            rng = SeedPolicy(root=split_seed(SEED, rep)).generator("split")
            got_tr, got_te = stratified_kfold(ds.y, 10, fold, rng)
            np.testing.assert_array_equal(got_te, te)
            np.testing.assert_array_equal(got_tr, tr)
        # the unstratified splitter with the same seed cuts other folds (the test can fail)
        plain = kfold(len(ds.y), 10, 0, SeedPolicy(root=split_seed(SEED, rep)).generator("split"))
        assert not np.array_equal(plain[1], study[0][1])
    # through prepare_data: the query rows are fold 3's held-out rows (queried in a stratified
    # random order, tests/test_query_order.py)
    sc = parse_scenario({**seeds_scenario(folds=10, fold=3, stratify=True,
                                          split_seed=split_seed(SEED, 1))}, source="test")
    if name == "seeds":
        with pytest.warns(PrivacyLeakWarning, match="training rows"):
            data = prepare_data(sc)
        te = fold_splits(ds, 10, 1, SeedPolicy(root=SEED), True)[3][1]
        np.testing.assert_array_equal(_rows(data.queries), _rows(ds.X[te]))
        np.testing.assert_array_equal(data.bounds.lower, np.delete(ds.X, te, axis=0).min(axis=0))


def _rows(X):
    """The rows of ``X`` in lexicographic order (which rows, not in which order)."""
    return X[np.lexsort(X.T[::-1])]


def test_subsample_is_the_studys_draw():
    """``[data] subsample = N``: the draw ``load_datasets`` makes for adult (same stream)."""
    ds = load_nb_dataset("seeds")
    sc = parse_scenario(seeds_scenario(subsample=120, folds=3, stratify=True, split_seed=SEED),
                        source="test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        data = prepare_data(sc)
    keep = np.sort(SeedPolicy(root=SEED).generator("subsample").permutation(len(ds.y))[:120])
    sub = ds.subset(keep)
    te = fold_splits(sub, 3, 0, SeedPolicy(root=SEED), True)[0][1]
    np.testing.assert_array_equal(_rows(data.queries), _rows(sub.X[te]))


def test_stratify_and_subsample_are_strict():
    assert_refused(seeds_scenario(stratify=True), "parse", r"stratify = true needs folds")
    assert_refused(seeds_scenario(stratify="yes", folds=3), "parse",
                   r"data\.stratify = 'yes': .*boolean")
    assert_refused(seeds_scenario(subsample=1), "parse",
                   r"data\.subsample = 1: .*greater than or equal to 2")


def write_two_halves(root: Path, *, far: bool) -> None:
    """80 rows, two classes; the first 40 (the held-out fold) lie far outside the rest
    when ``far``."""
    rng = np.random.default_rng(1)
    lines = ["a,b,label"]
    for i in range(80):
        y = i % 2
        a, b = rng.uniform(2, 4) + y, rng.uniform(5, 6) - y
        if far and i < 40:
            a, b = a * 10 + 50, -b * 7
        lines.append(f"{a:.4f},{b:.4f},{y}")
    (root / "halves.csv").write_text("\n".join(lines) + "\n")
    (root / "manifest.json").write_text(json.dumps({"halves": {"file": "halves.csv",
                                                               "label": "label"}}))


def halves(root: Path, **protocol) -> dict:
    return {"run": {"name": "halves", "seed": 2},
            "data": {"dataset": "halves", "data_dir": str(root), "folds": 2, "fold": 0,
                     "shuffle": False, "bounds": "data"},
            "parties": {"n": 1, "analysts": 1}, "runtime": {"kind": "inprocess"},
            "protocol": {"name": "dp-nb", "paper": True, "neighbours": "replace", **protocol}}


def test_training_row_bounds_ignore_the_held_out_rows_and_clip_queries(tmp_path):
    near, far = tmp_path / "near", tmp_path / "far"
    near.mkdir()
    far.mkdir()
    write_two_halves(near, far=False)
    write_two_halves(far, far=True)
    plans = {}
    for name, root in (("near", near), ("far", far)):
        with pytest.warns(PrivacyLeakWarning, match="training rows"):
            plans[name] = prepare(parse_scenario(halves(root), source="test")).plan
    # the released model's inputs (owner rows, public bounds) do not move with the test rows
    assert plans["near"].public["bounds"] == plans["far"].public["bounds"]
    np.testing.assert_array_equal(plans["near"].specs[0].kwargs["X"],
                                  plans["far"].specs[0].kwargs["X"])
    lo, hi = (np.array(plans["far"].public["bounds"][k]) for k in ("lower", "upper"))
    q = plans["far"].queries  # clipped by the analyst to the public bounds
    assert np.all((q >= lo) & (q <= hi)) and np.any(q == hi) and np.any(q == lo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        r = execute(parse_scenario(halves(far, noise="gaussian", delta_from_n="1/n",
                                          epsilon=2.0), source="test")).outcome.summary()
    assert r["released_models"] == 1 and r["delta_per_model"] == pytest.approx(1 / 40)
    assert r["delta_spent"] == pytest.approx(1 / 40)


def test_grid_rows_equal_the_study_loop():
    """On seeds, 3 folds: the non-private model and the majority class are equal fold by
    fold; the private curves at ε = 10⁴ (noise far below the data's spread) agree within
    one held-out row. Their noise streams differ -- the owner draws from ``[run].seed``
    by (analyst, request), the study by (dataset, repetition, fold, method, ε) -- so at
    small ε the two agree in distribution only."""
    s = Settings(1, 3, (1e4,), None, (), 1, 1, 1, 1, False, ())
    methods = tuple(m for m in METHODS if m.label in (
        "smooth", "vaidya", "smooth, Gaussian δ=1/n", "smooth, add/remove"))
    data = {"seeds": load_nb_dataset("seeds")}
    grid = {(r["method"], r["fold"]): r for r in accuracy(s, data, methods=methods)}
    study = {(r["method"], r["fold"]): r for r in accuracy_study(s, data, methods=methods)}
    assert set(grid) == set(study) and len(grid) == 3 * (len(methods) + 2)
    for key, r in grid.items():
        assert r["n_train"] == study[key]["n_train"]
        if key[0] in ("non-private", "majority"):
            assert r["accuracy"] == study[key]["accuracy"], key
        else:
            assert abs(r["accuracy"] - study[key]["accuracy"]) <= 1 / 70 + 1e-12, key
    same = sum(r["accuracy"] == study[k]["accuracy"] for k, r in grid.items())
    assert same >= len(grid) - 2
    # the grids: one per fold, curve x ε plus one non-private point, each fold its own seed
    grids = accuracy_grids(s, ("seeds",), methods)
    assert [len(g.points()) for g in grids] == [len(methods) + 1] * 3
    assert len({g.seeds[0] for g in grids}) == 3
