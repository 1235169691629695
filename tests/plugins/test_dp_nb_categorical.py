"""``dp-nb`` with declared categorical columns: noisy counts per (class, value)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ppknn.protocols.dp_nb.plugin import Encoding, categorical_groups
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario
from tests.plugins.equivalence import assert_refused

# (colour, class) counts: red -> 0, green -> 1, blue -> 2 by a clear majority
COUNTS = {("red", 0): 60, ("red", 1): 10, ("red", 2): 5,
          ("green", 0): 8, ("green", 1): 55, ("green", 2): 12,
          ("blue", 0): 6, ("blue", 1): 9, ("blue", 2): 50}
MAJORITY = {"red": 0, "green": 1, "blue": 2}
SCALE = 8
"""Rows per count (1,720 rows)."""


def write_dataset(root: Path, *, odd_value: bool = False) -> None:
    """A CSV with a constant numeric column, a categorical colour and a numeric column.

    The constant column and the uniform noise column carry no class signal; the colour
    decides the class by a clear majority. ``odd_value`` names a numeric column like an
    indicator (``"size=large"``) so that it is not one-hot.
    """
    rng = np.random.default_rng(0)
    rows = [(c, y) for (c, y), k in COUNTS.items() for _ in range(SCALE * k)]
    order = rng.permutation(len(rows))
    head = "const,colour,noise,label\n" if not odd_value else "const,size=large,noise,label\n"
    lines = []
    for i in order:
        colour, y = rows[i]
        second = colour if not odd_value else f"{rng.uniform(0, 3):.3f}"
        lines.append(f"1.0,{second},{rng.uniform(0, 1):.4f},{y}")
    (root / "toycat.csv").write_text(head + "\n".join(lines) + "\n")
    entry = {"file": "toycat.csv", "label": "label"}
    if not odd_value:
        entry["categorical"] = ["colour"]
    (root / "manifest.json").write_text(json.dumps({"toycat": entry}))


def raw(root: Path, n_columns: int = 5, **protocol) -> dict:
    """A dp-nb scenario on the toy dataset (columns: const, colour=blue/green/red, noise)."""
    return {
        "run": {"name": "toycat", "seed": 3},
        "data": {"dataset": "toycat", "data_dir": str(root), "test_fraction": 0.3,
                 "max_queries": 200,
                 "bounds": {"lower": [0.0] * n_columns, "upper": [3.0] * n_columns}},
        "parties": {"n": 1, "analysts": 2},
        "runtime": {"kind": "inprocess"},
        "protocol": {"name": "dp-nb", **protocol},
    }


def test_groups_are_read_from_the_indicator_names():
    names = ["const", "colour=blue", "colour=green", "colour=red", "noise"]
    assert categorical_groups(names) == {"colour": [1, 2, 3]}
    X = np.array([[1.0, 0, 0, 1, 0.5], [1.0, 1, 0, 0, 0.2]])

    class Cfg:
        categorical = "counts"

    enc = Encoding.of(Cfg(), names)  # type: ignore[arg-type]
    assert enc.numeric == (0, 4) and enc.categories == {2: [0, 1, 2]}
    np.testing.assert_array_equal(enc.apply(X, "rows"), [[1.0, 0.5, 2.0], [1.0, 0.2, 0.0]])


def test_non_private_counts_model_predicts_the_colour_majority(tmp_path):
    write_dataset(tmp_path)
    result = execute(parse_scenario(raw(tmp_path, method="non-private"), source="test"))
    data = result.prepared.data
    colour_cols = [j for j, n in enumerate(data.dataset.feature_names) if n.startswith("colour=")]
    values = [data.dataset.feature_names[j].split("=", 1)[1] for j in colour_cols]
    colour = [values[i] for i in np.argmax(data.queries[:, colour_cols], axis=1)]
    expected = np.array([MAJORITY[c] for c in colour])
    # the numeric columns carry no signal (one constant, one uniform noise column whose
    # per-class Gaussians differ a little): the colour's counts decide every query
    got = result.outcome.predictions
    assert np.mean(got == expected) >= 0.95


def test_private_counts_are_charged_and_carry_the_colour(tmp_path):
    write_dataset(tmp_path)
    counts = execute(parse_scenario(raw(tmp_path, epsilon=10.0, neighbours="replace"),
                                    source="test")).outcome.summary()
    onehot = execute(parse_scenario(raw(tmp_path, epsilon=10.0, neighbours="replace",
                                        categorical="one-hot"), source="test")).outcome.summary()
    assert counts["epsilon_spent"] == pytest.approx(2 * 10.0)  # two analysts, ε each
    assert counts["released_models"] == 2 and onehot["released_models"] == 2
    assert (counts["categorical"], counts["categorical_columns"]) == ("counts", ["colour"])
    assert (onehot["categorical"], onehot["categorical_columns"]) == ("one-hot", [])
    total = sum(COUNTS.values())
    majority_rate = max(sum(v for (_, y), v in COUNTS.items() if y == k) for k in range(3)) / total
    colour_rule = sum(max(v for (c, _), v in COUNTS.items() if c == col) for col in MAJORITY)
    # the colour rule scores 165/215 = 0.77 in expectation, the majority class 0.35
    assert colour_rule / total == pytest.approx(0.767, abs=1e-3)
    assert counts["accuracy"] > majority_rate + 0.3


def test_bad_categorical_inputs_are_refused(tmp_path):
    write_dataset(tmp_path)
    assert_refused(raw(tmp_path, categorical="ordinal"), "parse",
                   r"protocol\.categorical = 'ordinal': .*'counts'.*'one-hot'")
    odd = tmp_path / "odd"
    odd.mkdir()
    write_dataset(odd, odd_value=True)
    assert_refused(raw(odd, n_columns=3), "prepare",
                   r"protocol\.categorical = 'counts': column 'size' is not one-hot in row 0 "
                   r"of the training rows.*categorical = 'one-hot'")
    # the same file with categorical = "one-hot" runs (its column is a number)
    r = execute(parse_scenario(raw(odd, n_columns=3, categorical="one-hot", epsilon=1.0),
                               source="test")).outcome.summary()
    assert r["released_models"] == 2


@pytest.mark.slow
def test_adult_through_the_plugin_equals_the_experiments_training(tmp_path):
    """adult's eight categorical columns through the plugin give the model the reproduction's
    experiments train on the same rows (non-private, so the two are equal query by query)."""
    from ppknn.core.data import load_dataset
    from ppknn.protocols.dp_nb.datasets import load_nb_dataset
    from ppknn.protocols.dp_nb.schema import FeatureSchema
    from ppknn.protocols.dp_nb.training import NBConfig, train

    core = load_dataset("adult")
    lower, upper = core.X.min(axis=0).tolist(), core.X.max(axis=0).tolist()
    data = {"run": {"name": "adult-cat", "seed": 1},
            "data": {"dataset": "adult", "folds": 10, "fold": 3, "shuffle": False,
                     "max_queries": 400, "bounds": {"lower": lower, "upper": upper}},
            "parties": {"n": 1, "analysts": 1}, "runtime": {"kind": "inprocess"},
            "protocol": {"name": "dp-nb", "method": "non-private"}}
    result = execute(parse_scenario(data, source="test"))
    got = result.outcome.predictions
    nb = load_nb_dataset("adult")
    assert len(nb.categories) == 8 and len(nb.numeric) == 6
    test = np.array_split(np.arange(len(nb.y)), 10)[3]
    train_rows = np.setdiff1d(np.arange(len(nb.y)), test)
    schema = FeatureSchema.build(nb.X.shape[1], bounds=nb.bounds,
                                 categories={c: list(v) for c, v in nb.categories.items()})
    numeric, categorical = schema.encode(nb.X, out_of_bounds="error")
    model = train(numeric[train_rows], categorical[train_rows], nb.y[train_rows], n_classes=2,
                  schema=schema, config=NBConfig(method="non-private"),
                  rng=np.random.default_rng(0))
    # the 400 queries are a stratified random draw from the fold: find each one's row (a
    # repeated row of adult is any of its copies, which predict alike)
    where = {core.X[i].tobytes(): i for i in test}
    picked = np.array([where[q.tobytes()] for q in result.prepared.data.queries])
    assert len(picked) == 400 and np.isin(picked, test).all()
    want = model.params.predict(numeric[picked], categorical[picked])
    np.testing.assert_array_equal(got, want)
    # one-hot instead: a different model (indicator columns as Gaussians) on the same rows
    data["protocol"]["categorical"] = "one-hot"
    other = execute(parse_scenario(data, source="test")).outcome.predictions
    assert np.mean(other != want) > 0.01
