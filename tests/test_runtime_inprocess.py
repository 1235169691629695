"""InProcessRuntime: queued calls, run in the driver's order, watched per call.

Calls are queued when made and run in one batch on a worker thread when a
result is needed. These tests pin what that must not change: the outcome
of each call is as if it had run when made, a hang (also a blocking one
the fault machinery does not control) fails the run naming the party, and
the calls after a hung one still run.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from ppknn.core.errors import PartyFailure
from ppknn.core.messages import Message
from ppknn.core.runtime import FaultPlan, PartySpec, RunContext
from ppknn.core.runtime.inprocess import InProcessRuntime


class Counter:
    """A party that counts its calls and sends the count on; can block in a sleep."""

    def __init__(self, *, me, to, block_s=0.0):
        self.me, self.to, self.block_s, self.calls = me, to, block_s, 0

    def step(self, msg, round):
        if self.block_s:
            time.sleep(self.block_s)  # blocks in C: only a watchdog outside the call sees it
        self.calls += 1
        v = np.zeros(2) if msg is None else msg.payload["v"] + 1
        return Message("r", "count", round, -1, self.me, self.to, "v", {"v": v})


def _runtime(*, block=None, fault=None, timeout=30.0, secure=True, **context):
    """Three counters in a ring; ``context`` adds to the run context (default: no record)."""
    names = ["p0", "p1", "p2"]
    specs = [PartySpec(n, Counter, {"me": n, "to": names[(i + 1) % 3],
                                    "block_s": (block or {}).get(n, 0.0)})
             for i, n in enumerate(names)]
    rt = InProcessRuntime()
    rt.start(specs, RunContext(run_id="r", secure_channels=secure, fault=fault,
                               party_timeout_s=timeout, **({"record": False} | context)))
    return rt, names


def test_calls_run_in_order_when_a_result_is_needed():
    rt, names = _runtime(secure=False)
    try:
        msg = None
        for r in range(1, 4):
            for n in names:
                msg = rt.call(n, "step", msg, r, protocol="count", round=r)
        assert rt.state("p0", "calls") == 3  # state() runs what was queued before it
        out = rt.fetch(msg)
        assert out.payload["v"].tolist() == [8.0, 8.0]  # nine hops: 0, then +1 eight times
        assert [rt.state(n, "calls") for n in names] == [3, 3, 3]
    finally:
        rt.shutdown()


def test_blocking_party_fails_with_its_name_and_later_calls_still_run():
    rt, names = _runtime(block={"p1": 20.0}, timeout=0.5)
    try:
        first = rt.call("p0", "step", None, 1, protocol="count", round=1)
        stuck = rt.call("p1", "step", None, 1, protocol="count", round=1)
        after = rt.call("p2", "step", None, 1, protocol="count", round=1)
        with pytest.raises(PartyFailure, match="no progress") as err:
            rt.fetch([first, stuck, after])
        assert (err.value.party, err.value.protocol, err.value.round) == ("p1", "count", 1)
        assert rt.state("p0", "calls") == 1 and rt.state("p2", "calls") == 1
        assert rt.state("p1", "calls") == 0  # still asleep: its outcome will be discarded
        # the hung party is dead from now on; the others go on answering
        rt.call("p1", "step", None, 2)
        with pytest.raises(PartyFailure, match="dead"):
            rt.fetch(None)
        assert rt.fetch(rt.call("p2", "step", None, 2)).header.sender == "p2"
    finally:
        rt.shutdown()


def test_injected_hang_is_released_and_depending_calls_fail_with_it():
    rt, names = _runtime(fault=FaultPlan("p1", "step", 1, kind="hang"), timeout=0.5)
    try:
        msg = None
        for n in names:
            msg = rt.call(n, "step", msg, 1, protocol="count", round=1)
        with pytest.raises(PartyFailure) as err:
            rt.fetch(msg)
        assert err.value.party == "p1"
        assert rt.state("p2", "calls") == 0  # it needed p1's message: it never ran
    finally:
        rt.shutdown()


def test_raise_in_a_queued_batch_is_raised_at_fetch_in_call_order():
    rt, names = _runtime(fault=FaultPlan("p2", "step", 1, kind="raise"))
    try:
        refs = [rt.call(n, "step", None, 1, protocol="count", round=1) for n in names]
        refs.append(rt.call("p0", "step", None, 2, protocol="count", round=2))
        with pytest.raises(PartyFailure, match="injected fault") as err:
            rt.fetch(refs)
        assert err.value.party == "p2"
        assert rt.state("p0", "calls") == 2  # the call after the failing one ran
    finally:
        rt.shutdown()


def _recording_runtime(tmp_path, *, block=None, fault=None, timeout=30.0, **context):
    return _runtime(block=block, fault=fault, timeout=timeout, record=True,
                    transcript_dir=str(tmp_path / "t"), **context)


def _journaled(tmp_path):
    """Records on disk: the parts written and the journal of the part being filled."""
    import pyarrow.parquet as pq

    from ppknn.core.transcript import _read_journal

    folder = tmp_path / "t"
    rows = sum(pq.read_table(p).num_rows for p in folder.glob("part-*.parquet"))
    for journal in folder.glob("journal-*.arrows"):
        table = _read_journal(journal)
        rows += table.num_rows if table is not None else 0
    return rows


def test_records_are_the_recorder_s_whenever_the_driver_has_control(tmp_path):
    """Batched in this process (record_batch = 256), yet journaled once a fetch returns."""
    rt, names = _recording_runtime(tmp_path)
    try:
        msg = None
        for r in range(4):
            for n in names:
                msg = rt.call(n, "step", msg, r + 1, protocol="count", round=r + 1)
            rt.fetch(msg)
            assert rt.recorder.count == 3 * (r + 1)  # none waiting in a batch
            assert _journaled(tmp_path) == 3 * (r + 1)  # and on disk
    finally:
        rt.shutdown()


def test_a_failed_run_keeps_every_record_sent_before_the_failure(tmp_path):
    rt, names = _recording_runtime(tmp_path, fault=FaultPlan("p2", "step", 2, kind="raise"))
    try:
        msg = None
        for r in range(3):
            for n in names:
                msg = rt.call(n, "step", msg, r + 1, protocol="count", round=r + 1)
        with pytest.raises(PartyFailure):
            rt.fetch(msg)
        # p0, p1, p2 in round 1, then p0 and p1 in round 2: p2 raised before sending
        assert rt.recorder.count == 5 and _journaled(tmp_path) == 5
    finally:
        rt.shutdown()


def test_a_hung_call_keeps_the_records_sent_before_it(tmp_path):
    rt, names = _recording_runtime(tmp_path, block={"p1": 20.0}, timeout=0.5)
    try:
        first = rt.call("p0", "step", None, 1, protocol="count", round=1)
        stuck = rt.call("p1", "step", None, 1, protocol="count", round=1)
        with pytest.raises(PartyFailure, match="no progress"):
            rt.fetch([first, stuck])
        assert rt.recorder.count == 1 and _journaled(tmp_path) == 1
    finally:
        rt.shutdown()


def test_parts_end_where_they_would_with_records_one_by_one(tmp_path):
    """A batch handed over at once still closes each part at its flush_every-th record."""
    rt, names = _recording_runtime(tmp_path, flush_every=4, record_batch=256)
    try:
        msg = None
        for r in range(5):
            for n in names:
                msg = rt.call(n, "step", msg, r + 1, protocol="count", round=r + 1)
        rt.fetch(msg)  # 15 records in one batch
        rt.close_transcript()
    finally:
        rt.shutdown()
    import pyarrow.parquet as pq

    parts = sorted((tmp_path / "t").glob("part-*.parquet"))
    assert [pq.read_table(p).num_rows for p in parts] == [4, 4, 4, 3]
    seqs = [pq.read_table(p).column("round").to_pylist() for p in parts]
    assert sum(seqs, []) == [r + 1 for r in range(5) for _ in names]  # in the order sent
