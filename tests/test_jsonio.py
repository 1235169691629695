"""The results folder's JSON writer: the same document as ``json.dumps(indent=1)``, long
lists one line per item, strict JSON (a non-finite number is ``null``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.simulations.reporting import jsonio

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                    st.floats())
keys = st.one_of(st.text(max_size=6), st.integers(), st.booleans(), st.none(),
                 st.floats(allow_nan=False, allow_infinity=False))
documents = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=20),
                                     st.dictionaries(keys, inner, max_size=6)),
    max_leaves=60)


def _nulls(o: object) -> object:
    """``o`` as strict JSON has it: every NaN or infinite float is ``None``."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _nulls(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_nulls(v) for v in o]
    return o


def _default(o: object) -> object:
    return o.item() if isinstance(o, np.generic) else float(o)  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(documents, st.integers(min_value=0, max_value=20))
def test_parses_to_what_the_indenting_encoder_writes(doc, inline_after):
    text = jsonio.dumps(doc, inline_after=inline_after)
    got = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))
    expected = json.loads(json.dumps(_nulls(doc), indent=1))
    # compared as canonical text: NaN-free, so equal documents give equal text
    assert json.dumps(got, sort_keys=False) == json.dumps(expected, sort_keys=False)


def test_numpy_values_go_through_default_as_with_json():
    doc = {"a": [np.int64(3), np.float32(0.5)] * 10, "b": np.int64(7), "c": math.inf,
           "d": [np.float64("nan")] * 20}
    got = json.loads(jsonio.dumps(doc, default=_default))
    assert got == json.loads(json.dumps({**doc, "c": None, "d": [None] * 20}, indent=1,
                                        default=_default))


def test_long_lists_get_one_line_per_item_short_ones_stay_indented():
    rows = [{"observer": f"owner-{i}", "value": i / 7} for i in range(40)]
    text = jsonio.dumps({"leakage": {"rows": 40, "table": rows}, "ring": ["a", "b"]})
    lines = text.splitlines()
    row_lines = [line for line in lines if line.lstrip().startswith('{"observer"')]
    assert len(row_lines) == 40
    assert all(json.loads(line.strip().rstrip(",")) == row for line, row in zip(row_lines, rows))
    assert '  "a",' in lines and '  "b"' in lines  # a short list: one scalar per line
    # { leakage { rows, table [ 40 rows ] } ring [ a b ] }: nothing else takes a line
    assert len(lines) == 40 + 11
