"""A recorder that dies loses at most the batch it was receiving: recovery from disk.

The recorder journals every batch as it arrives; :func:`recover_transcript`
(which the runner calls when a failed run's recorder cannot close) turns the
parts and journal on disk into a closed transcript with totals and digests.
"""

from __future__ import annotations

import json
import shutil

import numpy as np

from ppknn.core.messages import Message, encode_arrays
from ppknn.core.transcript import Transcript, TranscriptRecorder, make_record, recover_transcript


def _batch(start: int, n: int) -> list[dict]:
    out = []
    for i in range(start, start + n):
        m = Message("run", "demo", i // 10, i, f"p{i % 3}", f"p{(i + 1) % 3}", "x",
                    {"v": np.arange(4) + i})
        out.append(make_record(m, payload=encode_arrays(m.payload), wire_bytes=100 + i))
    return out


def _crashed_recorder(folder, batches: int, flush_every: int = 25) -> TranscriptRecorder:
    """A recorder fed ``batches`` batches of 10 and then abandoned (never closed)."""
    rec = TranscriptRecorder(folder, flush_every=flush_every)
    for b in range(batches):
        rec.append(_batch(10 * b, 10))
    return rec


def test_every_batch_received_is_recovered_with_totals_and_digests(tmp_path):
    rec = _crashed_recorder(tmp_path / "t", 7)  # parts of 30 records, 10 in the journal
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert names == ["journal-000002.arrows", "part-000000.parquet", "part-000001.parquet"]
    record = recover_transcript(tmp_path / "t")
    assert record["messages"] == 70 == rec.count and record["recovered"] is True
    assert record["bytes"] == rec.totals.bytes
    assert record["per_party"] == rec.totals.as_dict()["per_party"]
    transcript = Transcript(tmp_path / "t")
    assert transcript.check() == 70
    assert sorted(record["part_sha256"]) == [p.name for p in transcript.parts()]
    assert not list((tmp_path / "t").glob("journal-*"))
    # a closed transcript is left as it is
    assert recover_transcript(tmp_path / "t") == json.loads(
        (tmp_path / "t" / "totals.json").read_text())


def test_a_batch_cut_short_is_dropped_and_the_rest_kept(tmp_path):
    _crashed_recorder(tmp_path / "t", 2, flush_every=1000)  # 20 records, journal only
    journal = tmp_path / "t" / "journal-000000.arrows"
    data = journal.read_bytes()
    journal.write_bytes(data[:-50])  # the recorder died while writing its second batch
    (tmp_path / "t" / "part-000000.tmp").write_bytes(b"PAR1 cut")  # and a part cut short
    record = recover_transcript(tmp_path / "t")
    assert record["messages"] == 10
    assert Transcript(tmp_path / "t").check() == 10
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["part-000000.parquet",
                                                                  "totals.json"]


def test_a_journal_whose_part_was_written_is_not_counted_twice(tmp_path):
    _crashed_recorder(tmp_path / "t", 3, flush_every=30)  # part 0 written, journal 0 gone
    shutil.copy(tmp_path / "t" / "part-000000.parquet", tmp_path / "copy")
    rec = _crashed_recorder(tmp_path / "u", 2, flush_every=30)  # journal 0 of 20 records
    shutil.copy(tmp_path / "copy", tmp_path / "u" / "part-000000.parquet")  # died in between
    assert rec.count == 20
    assert recover_transcript(tmp_path / "u")["messages"] == 30


def test_a_normal_close_leaves_no_journal_and_the_same_parts(tmp_path):
    rec = _crashed_recorder(tmp_path / "t", 7)
    rec.close()
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert names == ["part-000000.parquet", "part-000001.parquet", "part-000002.parquet",
                     "totals.json"]
    assert Transcript(tmp_path / "t").check() == 70


def test_an_unreadable_part_is_named_not_counted(tmp_path):
    _crashed_recorder(tmp_path / "t", 6, flush_every=30)  # two parts, no journal
    (tmp_path / "t" / "part-000001.parquet").write_bytes(b"not parquet")
    record = recover_transcript(tmp_path / "t")
    assert record["unreadable_parts"] == ["part-000001.parquet"]
    assert record["messages"] == 30
