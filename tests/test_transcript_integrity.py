"""Integrity at rest: a transcript part changed after it was written is never scored.

The recorder keeps each part's SHA-256 in ``totals.json`` (``part_sha256``);
``Transcript.check`` compares them, so ``ppknn leakage`` refuses a part with
flipped bytes by name (exit 2, nothing written) and ``ppknn show`` flags it.
Without the digests such a part still reads (Parquet pages carry no checksum
by default) and is scored silently: the tests fail on that version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.core.errors import DataError
from ppknn.core.transcript import Transcript

runner = CliRunner()


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("integrity") / "res"
    result = runner.invoke(app, ["run", "--runtime", "inprocess", "--output", str(out),
                                 "--set", "data.max_queries=30"])
    assert result.exit_code == 0, result.output
    return out


def _flip(part: Path, n: int = 64) -> None:
    """Flip ``n`` bytes in the middle of ``part`` (inside its data pages)."""
    data = bytearray(part.read_bytes())
    mid = len(data) // 2
    for i in range(mid, mid + n):
        data[i] ^= 0xFF
    part.write_bytes(bytes(data))


def test_the_recorder_keeps_each_parts_digest(run_folder):
    transcript = run_folder / "transcript"
    recorded = json.loads((transcript / "totals.json").read_text())["part_sha256"]
    parts = Transcript(transcript).parts()
    assert parts and sorted(recorded) == [p.name for p in parts]
    for p in parts:
        assert recorded[p.name] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert Transcript(transcript).check() > 0


def test_a_part_with_flipped_bytes_is_refused_by_leakage_and_flagged_by_show(run_folder,
                                                                            tmp_path):
    import shutil

    out = tmp_path / "res"
    shutil.copytree(run_folder, out)
    part = Transcript(out / "transcript").parts()[0]
    _flip(part)
    with pytest.raises(DataError, match=f"{part.name}.*is damaged: its SHA-256 differs"):
        Transcript(out / "transcript").check()
    before = _digest(out)
    result = runner.invoke(app, ["leakage", str(out)])
    text = "".join(result.output.split())  # a long path may wrap anywhere
    assert result.exit_code == 2, result.output
    assert part.name in text and "SHA-256" in text and "Traceback" not in result.output
    assert _digest(out) == before  # nothing rewritten from a damaged transcript
    shown = runner.invoke(app, ["show", str(out)])
    flat = "".join(shown.output.split())  # a long path may wrap anywhere
    assert "DAMAGED" in flat and part.name in flat
    clean = runner.invoke(app, ["show", str(run_folder)])
    assert clean.exit_code == 0 and "DAMAGED" not in clean.output


def test_a_part_the_recorder_did_not_write_is_refused(run_folder, tmp_path):
    import shutil

    out = tmp_path / "res"
    shutil.copytree(run_folder, out)
    import pyarrow.parquet as pq

    empty = Transcript(out / "transcript").table().slice(0, 0)  # the count still matches
    pq.write_table(empty, out / "transcript" / "part-999999.parquet")
    with pytest.raises(DataError, match="part-999999.parquet.*not one the recorder wrote"):
        Transcript(out / "transcript").check()


def test_a_transcript_written_before_the_digests_is_still_read(run_folder, tmp_path):
    import shutil

    out = tmp_path / "res"
    shutil.copytree(run_folder, out)
    totals = out / "transcript" / "totals.json"
    record = json.loads(totals.read_text())
    del record["part_sha256"]
    totals.write_text(json.dumps(record))
    assert Transcript(out / "transcript").check() > 0
