"""On Ray: the async owner actor serves concurrent analysts; the driver matches in-process."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import BudgetExhausted
from core.runtime import RunContext, make_runtime
from core.transcript import Transcript
from parties.specs import analyst_spec, dp_owner_spec
from protocols.dp_knn.driver import ask
from protocols.dp_knn.protocol import Query
from tests.dpknn.conftest import owner_kwargs

pytestmark = pytest.mark.ray

XQ = np.random.default_rng(3).random((50, 2))


def _query(eps, j):
    if j % 2:
        return Query(task="knn", algorithm="noninteractive", x=XQ, k=6, epsilon=eps)
    return Query(task="rn", algorithm="proposed", x=XQ, radius=0.1, epsilon=eps)


def test_async_owner_actor_serves_eight_concurrent_analysts(ray_local):
    """24 batches from 8 analysts are in flight at once; exactly the 10 that fit are answered."""
    from parties.analyst import Analyst
    from protocols.dp_knn.service import serve_on_ray

    ray = ray_local
    handle = serve_on_ray(owner_kwargs(epsilon=1.0), max_concurrency=8)
    analysts = [Analyst(party_id=f"analyst-{i}", owner="owner", run_id="run") for i in range(8)]
    try:
        refs = [handle.submit.remote(a.request(_query(0.1, j))) for j in range(3)
                for a in analysts]
        answered, refused = 0, 0
        for ref in refs:
            try:
                ray.get(ref)
                answered += 1
            except BudgetExhausted:
                refused += 1
        assert (answered, refused) == (10, 14)
        assert ray.get(handle.spent.remote()).epsilon == pytest.approx(1.0)
        assert len(ray.get(handle.entries.remote())) == 10
        assert ray.get(handle.peak_concurrency.remote()) >= 2
        assert ray.get(handle.close.remote())["messages"] == 48
    finally:
        ray.kill(handle)


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
