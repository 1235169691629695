"""Progress beats: a long step that beats outlives the party timeout; silence still fails.

A step that works for several times ``party_timeout_s`` while calling
:func:`~core.progress.beat` completes, on both runtimes; the same
step without beats fails naming its party, and so does a step that beats
for a while and then goes silent. In-process, an abandoned call that goes
on beating on its old thread does not keep the next call alive.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from ppknn.core.errors import PartyFailure
from ppknn.core.messages import Message
from ppknn.core.progress import BEAT_INTERVAL_S, beat, beats_to
from ppknn.core.runtime import PartySpec, RunContext, make_runtime


class Worker:
    """A ring party whose step works ``work_s`` seconds, beating for the first ``beat_s``."""

    def __init__(self, *, me, to, work_s=0.0, beat_s=0.0, quiet_first_s=0.0):
        self.me, self.to = me, to
        self.work_s, self.beat_s, self.quiet_first_s = work_s, beat_s, quiet_first_s

    def step(self, msg, round):
        start = time.monotonic()
        while (now := time.monotonic()) - start < self.work_s:
            time.sleep(0.02)
            if self.quiet_first_s <= now - start < self.quiet_first_s + self.beat_s:
                beat()
        v = np.zeros(2) if msg is None else msg.payload["v"] + 1
        return Message("r", "work", round, -1, self.me, self.to, "v", {"v": v})


def _runtime(kind, parties, timeout):
    """Three workers in a ring; ``parties`` sets a worker's keyword arguments."""
    names = ["p0", "p1", "p2"]
    specs = [PartySpec(n, Worker, {"me": n, "to": names[(i + 1) % 3], **parties.get(n, {})})
             for i, n in enumerate(names)]
    rt = make_runtime(kind)
    rt.start(specs, RunContext(run_id="r", secure_channels=True, record=False,
                               party_timeout_s=timeout))
    return rt, names


def _ring(rt, names):
    msg = None
    for n in names:
        msg = rt.call(n, "step", msg, 1, protocol="work", round=1)
    return msg


def test_beat_outside_a_runtime_does_nothing_and_beats_are_spaced():
    beat()  # no sink: nothing happens, nothing raises
    sent = []
    with beats_to(lambda: sent.append(time.monotonic())):
        end = time.monotonic() + 6 * BEAT_INTERVAL_S
        while time.monotonic() < end:
            beat()
    assert 5 <= len(sent) <= 7  # one per interval, not one per call
    assert min(np.diff(sent)) >= BEAT_INTERVAL_S * 0.99
    with beats_to(None):
        beat()  # explicitly nowhere
    assert len(sent) <= 7


# (runtime, timeout s): in-process 5 timeouts of work, on Ray 3 (its start-up is slower)
RUNTIMES = [pytest.param("inprocess", 0.5, id="inprocess"),
            pytest.param("ray", 2.0, id="ray", marks=pytest.mark.ray)]


def _started(kind, request):
    if kind == "ray":
        request.getfixturevalue("ray_local")  # the session's local Ray


@pytest.mark.parametrize("kind, timeout", RUNTIMES)
def test_a_step_that_beats_outlives_the_timeout(kind, timeout, request):
    _started(kind, request)
    work = 2.5 if kind == "inprocess" else 3 * timeout  # beating throughout
    rt, names = _runtime(kind, {"p1": {"work_s": work, "beat_s": work}}, timeout=timeout)
    try:
        out = rt.fetch(_ring(rt, names))
        assert out.header.sender == "p2"
    finally:
        rt.shutdown()


def test_inprocess_step_without_beats_still_fails_with_its_name():
    rt, names = _runtime("inprocess", {"p1": {"work_s": 2.5}}, timeout=0.5)
    try:
        with pytest.raises(PartyFailure, match="no progress") as err:
            rt.fetch(_ring(rt, names))
        assert err.value.party == "p1"
    finally:
        rt.shutdown()


@pytest.mark.parametrize("kind, timeout", RUNTIMES)
def test_a_step_that_goes_silent_fails_with_its_name(kind, timeout, request):
    _started(kind, request)
    # beats for 1 s, then works on in silence: failed a timeout after its last beat,
    # long before the step would end
    work = 4.0 if kind == "inprocess" else 30.0
    rt, names = _runtime(kind, {"p1": {"work_s": work, "beat_s": 1.0}}, timeout=timeout)
    try:
        t0 = time.monotonic()
        with pytest.raises(PartyFailure, match="no progress") as err:
            rt.fetch(_ring(rt, names))
        assert err.value.party == "p1"
        assert time.monotonic() - t0 < (3.5 if kind == "inprocess" else 15)
    finally:
        rt.shutdown()


def test_inprocess_abandoned_call_beating_keeps_no_other_call_alive():
    # p0 is silent past the timeout (abandoned), then beats on its old thread for 4 s;
    # p1's next call is silent for 2.5 s: it must fail, not live on p0's beats
    rt, names = _runtime("inprocess", {"p0": {"work_s": 5.0, "beat_s": 4.0,
                                              "quiet_first_s": 1.0},
                                       "p1": {"work_s": 2.5}}, timeout=0.5)
    try:
        with pytest.raises(PartyFailure) as first:
            rt.fetch(rt.call("p0", "step", None, 1, protocol="work", round=1))
        assert first.value.party == "p0"
        time.sleep(0.6)  # p0's old thread is beating now
        with pytest.raises(PartyFailure, match="no progress") as err:
            rt.fetch(rt.call("p1", "step", None, 1, protocol="work", round=1))
        assert err.value.party == "p1"
    finally:
        rt.shutdown()


def test_the_dp_owners_long_loops_beat():
    """The overlap graph (both paths) and the counts beat: a big request is not ended."""
    from ppknn.protocols.dp_knn.index import LabelIndex
    from ppknn.protocols.dp_knn.overlap import BRUTE_FORCE_MAX, overlap_edges

    rng = np.random.default_rng(0)
    seen = []
    for q, spread in ((40, 1.0), (BRUTE_FORCE_MAX + 200, 1e4)):  # all pairs; buckets
        x = rng.normal(scale=spread, size=(q, 3))
        with beats_to(lambda: seen.append("graph")):
            overlap_edges(x, np.full(q, 0.5))
        assert seen.count("graph") >= 1, q
        seen.clear()
    X, y = rng.normal(size=(300, 9)), rng.integers(0, 2, 300)
    index = LabelIndex(X, y, n_classes=2)
    with beats_to(lambda: seen.append("counts")):
        index.ball_counts(rng.normal(size=(50, 9)), np.full((50, 2), 1.5))
        index.count_profile(rng.normal(size=(50, 9)), np.array([0.5, 1.0, 2.0]))
    assert seen.count("counts") >= 1


def test_the_clique_search_beats():
    """The degeneracy scan and the search beat: a search of seconds is progress."""
    from ppknn.protocols.dp_knn.cliques import clique_bounds
    from ppknn.protocols.dp_knn.overlap import overlap_graph

    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 2))
    graph = overlap_graph(x, np.full(300, 0.25))
    seen = []
    with beats_to(lambda: seen.append(1)):
        clique_bounds(graph, work_limit=None)
    assert seen
