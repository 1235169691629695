"""The modified kd-tree: Algorithm 10 exactly, in 1-D and k-D, with ties; descents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.protocols.dptt.tree import ModifiedKDTree


def reference_tree(x: np.ndarray) -> dict[int, tuple[int, list[int]]]:
    """Algorithm 10 written recursively: heap node -> (value index, sorted leaf indices)."""
    k = x.shape[1]
    out: dict[int, tuple[int, list[int]]] = {}

    def create(ids: list[int], depth: int, node: int) -> None:
        if len(ids) == 1:
            out[node] = (ids[0], ids)
            return
        d = depth % k
        ids = sorted(ids, key=lambda i: (x[i, d], i))  # SORT(P, d); ties by index
        median = len(ids) // 2
        out[node] = (ids[median], sorted(ids))
        create(ids[:median], depth + 1, 2 * node)
        create(ids[median:], depth + 1, 2 * node + 1)

    create(list(range(len(x))), 0, 1)
    return out


def assert_matches_reference(x: np.ndarray) -> None:
    tree = ModifiedKDTree.build(x)
    ref = reference_tree(x)
    nodes = np.flatnonzero(tree.value >= 0)
    assert sorted(nodes.tolist()) == sorted(ref)
    for node, (value, leaves) in ref.items():
        assert tree.value[node] == value
        assert sorted(tree.subtree_leaves(node).tolist()) == sorted(leaves)
    assert tree.height == max(int(math.floor(math.log2(n))) for n in ref)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_build_equals_algorithm_10(n, k):
    x = np.random.default_rng(n * 10 + k).integers(0, 4, size=(n, k)).astype(float)  # many ties
    assert_matches_reference(x)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3).flatmap(lambda k: st.lists(
    st.lists(st.integers(-3, 3), min_size=k, max_size=k), min_size=1, max_size=70)))
def test_build_equals_algorithm_10_property(rows):
    assert_matches_reference(np.array(rows, dtype=float))


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 1025, 65536, 100_000])
def test_height_is_ceil_log2_and_all_data_at_leaves_once(n):
    x = np.random.default_rng(n).normal(size=(n, 2))
    tree = ModifiedKDTree.build(x)
    assert tree.height == math.ceil(math.log2(n)) if n > 1 else tree.height == 0
    leaves = np.flatnonzero(tree.size == 1)
    assert np.array_equal(np.sort(tree.value[leaves]), np.arange(n))
    assert np.array_equal(np.sort(tree.perm), np.arange(n))


def test_internal_nodes_are_subtree_medians_in_2d():
    x = np.random.default_rng(3).normal(size=(1000, 2))
    tree = ModifiedKDTree.build(x)
    for node in np.flatnonzero(tree.size >= 2)[:200]:
        depth = int(node).bit_length() - 1
        d = depth % 2
        left = x[tree.subtree_leaves(2 * node), d]
        right = x[tree.subtree_leaves(2 * node + 1), d]
        v = x[tree.value[node], d]
        assert left.max() <= v <= right.min()
        assert len(left) == tree.size[node] // 2
        assert tree.value[node] in tree.subtree_leaves(2 * node + 1)


def test_cmp_descent_is_the_predecessor_in_1d():
    x = np.arange(0.0, 100.0, 2.0)
    tree = ModifiedKDTree.build(x)
    q = np.array([[0.0], [3.0], [4.0], [57.9], [98.0], [500.0], [-1.0]])
    leaf = x[tree.descend(q, rule="cmp")]
    assert leaf.tolist() == [0.0, 2.0, 4.0, 56.0, 98.0, 98.0, 0.0]


def test_dis_descent_follows_the_nearer_child():
    x = np.array([[0.0], [1.0], [2.0], [10.0]])
    tree = ModifiedKDTree.build(x)  # root 2; left {0,1} (value 1), right {2,10} (value 10)
    # q = 5: left child value 1 is nearer than right child value 10, though q >= root
    assert x[tree.descend(np.array([[5.0]]), rule="dis")].item() == 1.0
    assert x[tree.descend(np.array([[5.0]]), rule="cmp")].item() == 2.0


def test_leaves_of_gives_subtree_slices():
    tree = ModifiedKDTree.build(np.arange(10.0))
    owner, ids = tree.leaves_of(np.array([2, 3]))
    assert sorted(ids[owner == 0].tolist()) == [0, 1, 2, 3, 4]
    assert sorted(ids[owner == 1].tolist()) == [5, 6, 7, 8, 9]


@pytest.mark.parametrize(("n", "s"), [(10_000, 1), (10_000, 2), (13_333, 2), (1000, 4),
                                      (100_000, 8)])
def test_early_stop_disagreements_count_the_short_nodes_of_the_built_tree(n, s):
    from ppknn.protocols.dptt.traversal import early_stop_disagreements

    tree = ModifiedKDTree.build(np.arange(float(n)))
    depth = tree.height - s - 1  # where Algorithm 16's height rule can stop E(s) early
    nodes = np.arange(1 << depth, 1 << (depth + 1))
    size = tree.hi[nodes] - tree.lo[nodes]
    assert early_stop_disagreements(n, s) == int(np.sum((size > 1) & (size <= 2**s)))
