"""Secure sums: exactness modulo 2^64 and what colluding neighbours learn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ppknn.core.messages import Message
from ppknn.core.runtime import InProcessRuntime, PartySpec, RunContext
from ppknn.core.transcript import Transcript
from ppknn.protocols.ppknn_ring import secure_sum as ss


class VectorNode:
    """A minimal party holding a fixed uint64 vector, driving the ring-owner sum steps."""

    def __init__(self, *, party_id, vector, ring, start, seed=0):
        from ppknn.protocols.ppknn_ring.config import RingSetup
        from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
        from ppknn.protocols.ppknn_ring.pp_topk import TopKParams

        self.inner = RingDataOwner(party_id=party_id, index=ring.index(party_id),
                                   X=np.zeros((1, 1)), y=np.zeros(1, int), n_classes=1,
                                   run_id="sum", seed=seed)
        self.inner.configure(RingSetup(ring=tuple(ring), start=start,
                                       params=TopKParams(k=1, max_distance=1.0)))
        self.inner.last_votes = np.asarray(vector, dtype=np.uint64)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def run_sum(vectors, kind, seed=0, transcript_dir=None):
    """Sum ``vectors`` (list of uint64 arrays) with the ring or shared protocol."""
    n = len(vectors)
    ring = [f"n{i}" for i in range(n)]
    start = ring[0]
    rt = InProcessRuntime()
    rt.start([PartySpec(p, VectorNode, {"party_id": p, "vector": v, "ring": ring,
                                         "start": start, "seed": seed})
              for p, v in zip(ring, vectors)],
             RunContext(run_id="sum", transcript_dir=transcript_dir))
    others = ring[1:]
    if kind == "ring":
        s = rt.call(start, "ring_sum_start")
        for p in others:
            s = rt.call(p, "ring_sum_step", s)
        res = rt.call(start, "ring_sum_finish", s, num_returns=n - 1)
    else:
        outs = {p: rt.call(p, "share_out", num_returns=n - 1) for p in ring}
        partials = {}
        for j in ring:
            incoming = []
            for i in ring:
                if i == j:
                    continue
                k = ring.index(i)
                order = ring[k + 1:] + ring[:k]
                incoming.append(outs[i][order.index(j)])
            partials[j] = rt.call(j, "share_in", *incoming)
        res = rt.call(start, "aggregate", *[partials[j] for j in others], num_returns=n - 1)
    totals = [rt.call(p, "receive_total", r) for p, r in zip(others, res)]
    rt.fetch(totals)
    total = rt.state(start, "total")
    rt.close_transcript()
    return total, Transcript(rt.transcript_table())


uint64s = arrays(np.uint64, (3, 4), elements=st.integers(0, 2**64 - 1))


@settings(max_examples=60, deadline=None)
@given(vectors=st.lists(uint64s, min_size=3, max_size=7), kind=st.sampled_from(["ring", "shared"]),
       seed=st.integers(0, 1000))
def test_secure_sum_equals_plain_sum_mod_2_64(vectors, kind, seed):
    total, _ = run_sum(vectors, kind, seed=seed)
    expected = np.zeros((3, 4), dtype=np.uint64)
    for v in vectors:
        expected = expected + v  # numpy uint64 wraps modulo 2^64
    np.testing.assert_array_equal(total.view(np.uint64), expected)


def _neighbour_attack(view_msgs, victim, pred, succ):
    """Ring-sum attack: what the successor received minus what the predecessor sent."""
    sent = next(m for m in view_msgs if m.sender == pred and m.receiver == victim)
    recv = next(m for m in view_msgs if m.sender == victim and m.receiver == succ)
    return ss.sub(recv.payload["s"], sent.payload["s"])


def test_ring_neighbours_recover_a_vote_vector():
    rng = np.random.default_rng(0)
    vectors = [rng.integers(0, 50, (3, 4)).astype(np.uint64) for _ in range(5)]
    _, transcript = run_sum(vectors, "ring")
    victim, pred, succ = "n2", "n1", "n3"
    view = transcript.view([pred, succ])  # pooled views, provenance stripped
    assert all(not m.provenance for m in view.received + view.sent)
    recovered = _neighbour_attack(list(view.received) + list(view.sent), victim, pred, succ)
    np.testing.assert_array_equal(recovered, vectors[2])


def test_shared_sum_neighbours_learn_nothing():
    """The same coalition in the secret-shared sum: its view is independent of the victim's
    vector. Two runs with the same randomness and the victim's vector changed by D (and an
    honest node's by -D, keeping the total) give identical coalition views for the
    shares, and the attacker's best estimates are uniform over the ring."""
    n = 5
    victim, pred, succ = "n2", "n1", "n3"
    coalition = [pred, succ]
    estimates = []
    for seed in range(400):
        rng = np.random.default_rng(seed)
        vectors = [rng.integers(0, 50, (1, 1)).astype(np.uint64) for _ in range(n)]
        _, transcript = run_sum(vectors, "shared", seed=seed)
        view = transcript.view(coalition)
        msgs = list(view.received) + list(view.sent)
        # everything about the victim the coalition holds: its shares to them, its partial sum
        to_coalition = [m.payload["s"] for m in msgs if m.sender == victim and m.kind == "share"]
        assert len(to_coalition) == 2
        partial = [m for m in transcript.messages() if m.sender == victim
                   and m.kind == "partial-sum"]
        assert not any(m.receiver in coalition for m in partial)  # goes to the aggregator
        guess = ss.add(to_coalition[0], to_coalition[1])
        estimates.append(int(guess[0, 0]))
        assert int(guess[0, 0]) != int(vectors[2][0, 0])
    # the estimate is uniform over Z_(2^64): its top byte is uniform over 256 values
    top = np.array(estimates, dtype=np.uint64) >> np.uint64(56)
    from scipy import stats

    counts = np.bincount(top.astype(np.int64), minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-6


def test_fixed_point_encoding_rejects_overflow():
    from ppknn.core.errors import ProtocolError

    with pytest.raises(ProtocolError):
        ss.encode_fixed(np.array([2.0**63]))
    with pytest.raises(ProtocolError):
        ss.encode_fixed(np.array([-1.0]))


def test_weight_scale_prevents_overflow():
    smallest = np.array([1e-9, 0.5, 3.0])
    scale = ss.weight_scale(smallest, k=50)
    worst = 2 * 50 * (1 / smallest) * scale
    assert (worst < 2.0**63).all()
    assert (np.log2(scale) == np.round(np.log2(scale))).all()  # powers of two


def test_split_shares_sum_back():
    v = np.array([1, 2, 3], dtype=np.uint64)
    shares = ss.split_shares(v, 4, np.random.default_rng(0).integers(
        0, 2**64, (3, 3), dtype=np.uint64))
    np.testing.assert_array_equal(np.add.reduce(shares, axis=0, dtype=np.uint64), v)


def test_message_payloads_are_masked_in_ring_sum():
    vectors = [np.full((2, 2), 7, dtype=np.uint64) for _ in range(4)]
    _, transcript = run_sum(vectors, "ring")
    first = next(m for m in transcript.messages() if m.kind == "partial-sum" and m.sender == "n0")
    assert isinstance(first, Message)
    assert not np.array_equal(first.payload["s"], vectors[0])


def _coalition_payloads(transcript, coalition):
    view = transcript.view(coalition)
    return [(m.sender, m.receiver, m.kind, m.payload["s"].tobytes())
            for m in list(view.received) + list(view.sent)]


@pytest.mark.parametrize("kind, identical", [("shared", True), ("ring", False)])
def test_coalition_view_independent_of_victim_input(kind, identical):
    """Change the victim's vector by +D and another honest node's by -D (same total, same
    randomness): the neighbours' pooled view is bit-identical in the shared sum (so it
    cannot depend on the victim's input), and differs in the ring sum."""
    rng = np.random.default_rng(5)
    base = [rng.integers(0, 50, (2, 3)).astype(np.uint64) for _ in range(5)]
    shifted = [v.copy() for v in base]
    D = np.uint64(17)
    shifted[2] = shifted[2] + D  # victim n2
    shifted[4] = shifted[4] - D  # honest n4, outside the coalition {n1, n3}
    _, t1 = run_sum(base, kind, seed=9)
    _, t2 = run_sum(shifted, kind, seed=9)
    same = _coalition_payloads(t1, ["n1", "n3"]) == _coalition_payloads(t2, ["n1", "n3"])
    assert same is identical
