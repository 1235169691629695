"""On Ray: a threaded owner actor serves concurrent analysts; runs match in-process."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ppknn.core.errors import BudgetExhausted
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.runtime.concurrency import SEQ_STRIDE
from ppknn.core.service import Refused
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_knn.driver import ask
from ppknn.protocols.dp_knn.parties import analyst_spec, dp_owner_spec
from ppknn.protocols.dp_knn.protocol import Query
from tests.dpknn.conftest import owner_kwargs
from tests.dpknn.serving import query, rounds_of_requests, serve

pytestmark = pytest.mark.ray

XQ = np.random.default_rng(3).random((50, 2))


def _query(eps, j):
    if j % 2:
        return Query(task="knn", algorithm="noninteractive", x=XQ, k=6, epsilon=eps)
    return Query(task="rn", algorithm="proposed", x=XQ, radius=0.1, epsilon=eps)


def _answers(kind, requests, transcript_dir=None, **serving):
    rt, names = serve(kind, transcript_dir=transcript_dir, **serving)
    try:
        got = ask(rt, requests(names), refusals="return")
        ledger = rt.state("owner", "ledger")
        peak = rt.state("owner", "peak_concurrency")
        totals = rt.close_transcript()
    finally:
        rt.shutdown()
    return got, ledger, peak, totals


def _same(a, b):
    assert (a.request, a.epsilon) == (b.request, b.epsilon)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.radius, b.radius)


def test_threaded_owner_actor_serves_eight_concurrent_analysts(ray_local, tmp_path):
    """24 batches from 8 analysts are in flight at once; exactly the 10 that fit are answered.

    Which 10 depends on the arrival order, but every answer equals the in-process
    (sequential) answer to the same (analyst, request id), and every refusal is a
    recorded ``"refused"`` message that left the ledger untouched.
    """
    def requests(names):
        return rounds_of_requests(names, 0.1, 3)

    got, ledger, peak, totals = _answers("ray", requests, tmp_path / "t", epsilon=1.0)
    answered = [g for g in got if not isinstance(g, Refused)]
    assert (len(answered), len(got) - len(answered)) == (10, 14)
    assert ledger.spent_exact()[0] == Fraction(1) and len(ledger.entries) == 10
    assert peak >= 2  # answers really overlapped
    assert totals["messages"] == 48
    kinds = Transcript(tmp_path / "t").table().column("kind").to_pylist()
    assert kinds.count("answer") == 10 and kinds.count("refused") == 14
    # the sequential reference, with budget for everything
    reference, _, ref_peak, _ = _answers("inprocess", requests, epsilon=10.0)
    assert ref_peak == 1
    for g, ref in zip(got, reference, strict=True):
        if not isinstance(g, Refused):
            _same(g, ref)


def test_concurrent_owner_gives_the_in_process_answers_and_transcript(ray_local, tmp_path):
    """With budget for every request: same answers, same canonical transcript, same sequence
    numbers (from the driver's call order), whatever the interleaving on Ray."""
    def requests(names):
        return rounds_of_requests(names, 0.25, 3)

    local, _, _, _ = _answers("inprocess", requests, tmp_path / "local", epsilon=10.0)
    remote, ledger, peak, _ = _answers("ray", requests, tmp_path / "ray", epsilon=10.0)
    sequential, _, _, _ = _answers("inprocess", requests, epsilon=10.0, max_concurrency=1)
    for a, b, c in zip(local, remote, sequential, strict=True):
        _same(a, b)
        _same(a, c)
    assert peak >= 2 and len(ledger.entries) == 24
    rows_local = Transcript(tmp_path / "local").canonical_rows()
    assert rows_local == Transcript(tmp_path / "ray").canonical_rows() and len(rows_local) == 48
    owner_seqs = sorted(m.seq for m in Transcript(tmp_path / "ray").messages()
                        if m.sender == "owner" and m.receiver == "a3")
    assert owner_seqs == [3 * SEQ_STRIDE, 11 * SEQ_STRIDE, 19 * SEQ_STRIDE]  # tickets 3, 11, 19


def test_concurrent_owner_rejects_nothing_it_can_pay_for(ray_local):
    rt, _ = serve("ray", analysts=1, epsilon=1.0, max_concurrency=4)
    try:
        answers = ask(rt, [("a0", "owner", query(0.25, i)) for i in range(4)])
        assert sorted(a.request for a in answers) == [0, 1, 2, 3]
        with pytest.raises(BudgetExhausted):
            ask(rt, [("a0", "owner", query(0.01))], first_round=10)
        assert len(rt.state("owner", "ledger").entries) == 4
    finally:
        rt.shutdown()


def _run(kind, transcript_dir):
    kw = {k: v for k, v in owner_kwargs(epsilon=2.0, seed=5).items() if k != "party_id"}
    rt = make_runtime(kind)
    rt.start([dp_owner_spec(party_id="owner", **kw),
              analyst_spec(party_id="alice", owner="owner", run_id="run"),
              analyst_spec(party_id="bob", owner="owner", run_id="run", index=2)],
             RunContext(run_id="run", transcript_dir=transcript_dir, secure_channels=True))
    try:
        answers = ask(rt, [("alice", "owner", _query(0.5, 0)), ("bob", "owner", _query(0.5, 1)),
                           ("alice", "owner", _query(0.25, 1))])
        rt.close_transcript()
    finally:
        rt.shutdown()
    return answers


def test_ray_runtime_gives_the_same_answers_and_transcript(ray_local, tmp_path):
    local = _run("inprocess", tmp_path / "local")
    remote = _run("ray", tmp_path / "ray")
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.radius, b.radius)
    rows_local = Transcript(tmp_path / "local").canonical_rows()
    assert rows_local == Transcript(tmp_path / "ray").canonical_rows() and len(rows_local) == 6
