"""Transcript: incremental Parquet parts, totals part by part, views, crash safety."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.leakage import message_key
from ppknn.core.messages import Message, encode_arrays
from ppknn.core.transcript import Transcript, TranscriptRecorder, View, make_record


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


def test_large_payloads_flush_by_bytes(tmp_path):
    """Records of 120 KB each (payload and provenance): a 300 KB byte bound writes a
    part every 3 records, whatever the record-count bound."""
    one = _record(0, size=10_000)
    size = len(one["payload"]) + len(one["provenance"])
    assert size * 2 < 300_000 < size * 3
    rec = TranscriptRecorder(tmp_path, flush_every=10_000, flush_bytes=300_000)
    for i in range(7):
        rec.append([_record(i, size=10_000)])
    assert len(list(tmp_path.glob("part-*.parquet"))) == 2  # 6 written, 1 buffered
    rec.close()
    assert len(Transcript(tmp_path)) == 7


def test_host_sends_batches_by_bytes():
    from ppknn.core.channels import make_endpoint
    from ppknn.core.runtime.host import PartyHost

    class Collect:
        def __init__(self):
            self.batches = []

        def append(self, records):
            self.batches.append(len(records))

        append_sync = append

    sink = Collect()
    host = PartyHost(run_id="r", recorder=sink, secure_channels=False, record_batch=1000,
                     record_batch_bytes=100_000)
    endpoint = make_endpoint("a", "r", secure=False)
    for _ in range(7):
        host._seal(endpoint, Message("r", "demo", 1, -1, "a", "b", "v",
                                     {"v": np.zeros(5_000)}))  # 40 KB each
    assert sink.batches == [3, 3]  # sent at 120 KB and 240 KB; one record still buffered
    assert host.flush() == 1 and sink.batches == [3, 3, 1]


def test_bad_byte_bounds():
    import pytest

    from ppknn.core.errors import ConfigError
    from ppknn.core.runtime import RunContext

    with pytest.raises(ConfigError, match="flush_bytes must be >= 1, got 0"):
        TranscriptRecorder(None, flush_bytes=0)
    with pytest.raises(ConfigError, match="record_batch_bytes must be >= 1, got -5"):
        RunContext(run_id="r", record_batch_bytes=-5)


def test_per_party_views_equal_one_by_one_and_protocol_filter(tmp_path):
    msgs = []
    for i in range(12):
        sender, receiver = ["a", "b", "c"][i % 3], ["b", "c", "a"][i % 3]
        msgs.append(Message("r", "topk" if i % 2 else "sum", 1 + i // 3, i, sender, receiver,
                            "v", {"v": np.full(2, float(i))}, {"v": np.full(2, i, np.int32)}))
    views = View.per_party(msgs, ["a", "b", "c", "d"])
    for p in "abcd":
        assert views[p] == View.of(msgs, p)
    assert views["d"].received == () and views["d"].sent == ()
    assert all(not m.provenance for v in views.values() for m in v.received + v.sent)

    rec = TranscriptRecorder(tmp_path, flush_every=5)
    for m in msgs:
        payload = encode_arrays(m.payload)
        rec.append([make_record(m, payload=payload, wire_bytes=len(payload))])
    rec.close()
    on_disk = Transcript(tmp_path)
    in_memory = Transcript(on_disk.table())
    for t in (on_disk, in_memory):
        topk = t.messages(protocol="topk")
        assert [m.seq for m in topk] == sorted(m.seq for m in msgs if m.protocol == "topk")
        assert len(t.messages()) == 12


def test_records_to_table_equals_from_pylist_and_chunks_binary(monkeypatch):
    import pyarrow as pa

    import ppknn.core.transcript as tr
    from ppknn.core.transcript import SCHEMA, records_to_table

    recs = [_record(i, size=1 + 37 * i) for i in range(25)] + [_record(99, size=0)]
    expected = pa.Table.from_pylist(recs, schema=SCHEMA)
    assert records_to_table(recs).equals(expected)
    monkeypatch.setattr(tr, "_MAX_BINARY_CHUNK", 2_000)  # force several chunks
    chunked = records_to_table(recs)
    assert chunked["payload"].num_chunks > 3
    assert chunked.equals(expected)
    assert records_to_table([]).num_rows == 0


def test_a_folder_holding_a_transcript_is_refused_never_emptied(tmp_path):
    """A second recorder (a re-run) on the same folder leaves the first transcript intact."""
    from ppknn.core.errors import ConfigError
    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario

    rec = TranscriptRecorder(tmp_path, flush_every=2)
    rec.append([_record(i) for i in range(5)])
    rec.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ConfigError, match="already holds a transcript"):
        TranscriptRecorder(tmp_path)
    sc = parse_scenario({"data": {"max_queries": 5}, "runtime": {"kind": "inprocess"}})
    with pytest.raises(ConfigError, match="already holds a transcript"):
        execute(sc, transcript_dir=tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
