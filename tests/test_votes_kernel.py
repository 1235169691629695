"""The paper's class votes counted in one compiled pass equal numpy's counts, bit for bit.

``votes.paper_counts`` (``_topk_kernel.class_counts``) against the numpy path it replaces
for a node holding one block of the whole batch (``voter_mask(..., "paper")`` then the
counts ``RingDataOwner._class_votes`` makes), over random batches with ties at the k-th
value, NaN and infinite distances and both signs of zero; the cases it hands back; and
deliberately broken builds of the C source, which the same comparison must catch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ppknn.protocols.ppknn_ring import votes
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.votes import paper_counts, voter_mask
from tests.c_kernels import build_variant, compiler

SOURCE = Path(__file__).resolve().parents[1] / "protocols" / "ppknn_ring" / "_topk_kernel.c"


def _numpy_counts(dist, final, labels, c_n):
    """The counts as numpy makes them: the paper's voter mask, then one count per class."""
    mask = voter_mask(dist, final, "paper")
    q_i, col = np.nonzero(mask)
    counts = np.bincount(q_i * c_n + labels[col], minlength=len(dist) * c_n)
    return counts.astype(np.uint64).reshape(len(dist), c_n)


def _case(seed):
    """A batch: distances on a coarse grid (ties), the final vector drawn from them."""
    rng = np.random.default_rng(seed)
    q, w, c_n, k = (int(rng.integers(0, 70)), int(rng.integers(0, 60)),
                    int(rng.integers(1, 30)), int(rng.integers(1, 7)))
    dist = np.round(rng.random((q, w)) * 6) / 6
    special = rng.random((q, w))
    dist[special < 0.03] = np.nan
    dist[(special >= 0.03) & (special < 0.05)] = np.inf
    dist[(special >= 0.05) & (special < 0.1)] = -0.0
    if w:  # the k-th value often equal to a distance of the row (ties at Delta)
        final = np.sort(dist[:, rng.integers(0, w, k)], axis=1) if q else np.zeros((0, k))
    else:
        final = np.sort(rng.random((q, k)), axis=1)
    pick = rng.random(q)
    final[pick < 0.05, -1] = np.nan
    final[(pick >= 0.05) & (pick < 0.1), -1] = np.inf
    final[(pick >= 0.1) & (pick < 0.15), -1] = 0.0  # meets the row's -0.0
    final = np.ascontiguousarray(final)
    return dist, final, rng.integers(0, c_n, w), c_n


needs_kernel = pytest.mark.skipif(getattr(votes._kernel, "class_counts", None) is None,
                                  reason="the compiled extension is not built here")


@needs_kernel
@pytest.mark.parametrize("block", range(6))
def test_compiled_counts_equal_numpy(block):
    for seed in range(block * 50, (block + 1) * 50):
        dist, final, labels, c_n = _case(seed)
        got = paper_counts(dist, final, labels, c_n)
        want = _numpy_counts(dist, final, labels, c_n)
        assert got is not None, seed
        assert got.dtype == np.uint64 and got.shape == want.shape == (len(dist), c_n), seed
        np.testing.assert_array_equal(got, want, err_msg=str(seed))


def test_the_uncommon_cases_are_handed_back():
    """``None`` (numpy decides) for inputs outside the compiled pass's common case."""
    dist, final, labels, c_n = _case(3)
    assert len(dist) and dist.shape[1] > 1
    assert paper_counts(dist.astype(np.float32), final, labels, c_n) is None
    assert paper_counts(np.asfortranarray(dist), final, labels, c_n) is None
    assert paper_counts(dist, np.asfortranarray(final), labels, c_n) is None
    assert paper_counts(dist, final, labels.astype(np.int32), c_n) is None
    assert paper_counts(dist, final, labels[:-1], c_n) is None
    assert paper_counts(dist, final[:-1], labels, c_n) is None
    assert paper_counts(dist, final[:, :0], labels, c_n) is None
    if votes._kernel is not None:
        bad = labels.copy()
        bad[-1] = c_n  # outside [0, c_n): the kernel writes nothing and hands it back
        assert paper_counts(dist, final, bad, c_n) is None
        bad[-1] = -1
        assert paper_counts(dist, final, bad, c_n) is None


def test_without_the_extension_numpy_counts(monkeypatch):
    monkeypatch.setattr(votes, "_kernel", None)
    dist, final, labels, c_n = _case(5)
    assert paper_counts(dist, final, labels, c_n) is None


def _owner(rng, n, c_n, k):
    X = np.round(rng.random((n, 2)) * 4) / 4  # repeated points: ties and zero distances
    from ppknn.protocols.ppknn_ring.config import RingSetup
    from ppknn.protocols.ppknn_ring.pp_topk import TopKParams

    owner = RingDataOwner(party_id="a", index=0, X=X, y=rng.integers(0, c_n, n),
                          n_classes=c_n, run_id="r", seed=0)
    owner.configure(RingSetup(ring=("a", "b"), start="a",
                              params=TopKParams(k=k, max_distance=10.0)))
    return owner


class _Counting:
    """The extension with its calls to ``class_counts`` counted."""

    def __init__(self, module):
        self.module, self.calls = module, 0

    def class_counts(self, *args):
        self.calls += 1
        return self.module.class_counts(*args)


@needs_kernel
@pytest.mark.parametrize("seed", range(30))
def test_an_owner_votes_the_same_with_and_without_the_extension(seed, monkeypatch):
    """``local_votes`` of a node holding the whole batch: the compiled pass, then numpy."""
    rng = np.random.default_rng(seed)
    owner = _owner(rng, int(rng.integers(1, 80)), int(rng.integers(1, 30)),
                   int(rng.integers(1, 6)))
    queries = np.round(rng.random((int(rng.integers(1, 90)), 2)) * 4) / 4
    owner.load_queries(queries)
    owner.final_g = np.ascontiguousarray(np.sort(
        np.round(rng.random((len(queries), owner.params.k)) * 4) / 4, axis=1))
    counting = _Counting(votes._kernel)
    monkeypatch.setattr(votes, "_kernel", counting)
    compiled = owner.local_votes()
    assert counting.calls == 1
    monkeypatch.setattr(votes, "_kernel", None)
    plain = owner.local_votes()
    assert compiled.dtype == plain.dtype == np.uint64 and compiled.shape == plain.shape
    np.testing.assert_array_equal(compiled, plain)


def _caught(module) -> int:
    """How many of 200 batches a build of the kernel counts differently from numpy."""
    wrong = 0
    for seed in range(200):
        dist, final, labels, c_n = _case(seed)
        counts = np.full((len(dist), c_n), 7, dtype=np.uint64)  # overwritten where counted
        status = module.class_counts(dist, final, labels, counts, len(dist), dist.shape[1],
                                     final.shape[1], c_n)
        wrong += status != 1 or not np.array_equal(counts, _numpy_counts(dist, final,
                                                                          labels, c_n))
    return wrong


@pytest.mark.parametrize("mutation", [
    ("if (d[j] <= delta) out[labels[j]]++;", "if (d[j] < delta) out[labels[j]]++;"),
    ("memset(counts, 0, (size_t)(q * c) * sizeof(uint64_t));", ""),
    ("const double delta = final[r * k + k - 1];", "const double delta = final[r * k];"),
    ("if (d[j] <= delta) out[labels[j]]++;", "if (!(d[j] > delta)) out[labels[j]]++;"),
])
def test_a_broken_count_is_caught(tmp_path, mutation):
    """A tie at Delta dropped, counts not cleared, the first value read as Delta, a NaN
    counted: each caught."""
    if compiler() is None or not SOURCE.exists():
        pytest.skip("no C compiler or no source here")
    text = SOURCE.read_text()
    assert text.count(mutation[0]) == 1
    assert _caught(build_variant(tmp_path, text.replace(*mutation), "broken",
                                 "_topk_kernel")) >= 5


def test_the_counting_source_as_shipped_passes(tmp_path):
    """The unmutated source built the same way agrees on every batch (the control)."""
    if compiler() is None or not SOURCE.exists():
        pytest.skip("no C compiler or no source here")
    assert _caught(build_variant(tmp_path, SOURCE.read_text(), "control", "_topk_kernel")) == 0
