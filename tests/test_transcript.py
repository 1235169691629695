"""Transcript: incremental Parquet parts, totals part by part, views, crash safety."""

from __future__ import annotations

import numpy as np

from core.leakage import message_key
from core.messages import Message, encode_arrays
from core.transcript import Transcript, TranscriptRecorder, View, make_record


def _record(i, sender="a", receiver="b", size=3):
    m = Message("r", "demo", 1 + i % 2, i, sender, receiver, "v",
                {"v": np.full(size, float(i))}, {"v": np.full(size, 7, np.int32)})
    payload = encode_arrays(m.payload)
    return make_record(m, payload=payload, wire_bytes=len(payload) + 10)


def test_parts_are_written_incrementally_and_totals_match(tmp_path):
    rec = TranscriptRecorder(tmp_path, flush_every=10)
    for start in range(0, 95, 5):
        rec.append([_record(i, sender="a" if i % 3 else "c") for i in range(start, start + 5)])
    assert len(list(tmp_path.glob("part-*.parquet"))) == 9  # 90 flushed, 5 still buffered
    totals = rec.close()
    t = Transcript(tmp_path)
    assert len(t.parts()) == 10 and len(t) == 95
    streamed = t.totals().as_dict()
    assert streamed == totals
    assert streamed["per_party"]["b"]["received_messages"] == 95


def test_parts_readable_before_close(tmp_path):
    """A crash after a flush leaves complete parts that read back as a table."""
    rec = TranscriptRecorder(tmp_path, flush_every=4)
    rec.append([_record(i) for i in range(3)])
    rec.append([_record(i) for i in range(3, 6)])  # 6 buffered >= 4: one part written
    rec.append([_record(i) for i in range(6, 8)])
    assert Transcript(tmp_path).table().num_rows == 6  # the unflushed 2 are all that's lost


def test_views_strip_provenance_and_pool(tmp_path):
    rec = TranscriptRecorder(tmp_path)
    rec.append([_record(0, "a", "b"), _record(1, "b", "c"), _record(2, "c", "a")])
    rec.close()
    t = Transcript(tmp_path)
    full = t.messages(with_provenance=True)
    assert all(m.provenance["v"].tolist() == [7, 7, 7] for m in full)
    vb = t.view("b")
    assert [m.sender for m in vb.received] == ["a"] and [m.receiver for m in vb.sent] == ["c"]
    assert all(m.provenance == {} for m in vb.received + vb.sent)
    pooled = t.view(["b", "c"])
    merged = vb.merge(t.view("c"))
    assert [message_key(m) for m in pooled.received] == [message_key(m) for m in merged.received]
    assert [message_key(m) for m in pooled.sent] == [message_key(m) for m in merged.sent]
    assert len(pooled.received) == 2
    assert isinstance(View.of(full, "a"), View)
    assert [m.round for m in t.by_round(2)] == [2]
    assert [m.sender for m in t.by_receiver("a")] == ["c"]
