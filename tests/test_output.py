"""Results folders: never overwritten in place, failures keep what was recorded."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.core.errors import ConfigError
from ppknn.simulations.leakage import recompute
from ppknn.simulations.output import FAILURE, check_complete, staged

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(out: Path, *extra: str):
    return runner.invoke(app, ["run", "--runtime", "inprocess", "--output", str(out),
                               "--set", "data.max_queries=30", *extra])


def test_existing_results_refused_then_replaced_with_overwrite(tmp_path):
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    before = _digest(out)
    again = _run(out, "--seed", "5")
    assert again.exit_code == 2 and "already holds results" in again.output
    assert _digest(out) == before
    replaced = _run(out, "--seed", "5", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert json.loads((out / "scenario.json").read_text())["run"]["seed"] == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing left behind


def test_overwrite_never_replaces_a_folder_without_ppknn_output(tmp_path, monkeypatch):
    """A user's non-empty folder is refused even with --overwrite, and so is a folder holding
    the working directory; nothing in either is touched."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    refused = _run(mine, "--overwrite")
    assert refused.exit_code == 2 and "holds no ppknn output" in " ".join(refused.output.split())
    assert (mine / "notes.txt").read_text() == "precious" and len(list(mine.iterdir())) == 1
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    assert (out / ".ppknn-output").is_file()
    before = _digest(out)
    monkeypatch.chdir(out)
    inside = _run(Path("."), "--overwrite")
    assert inside.exit_code == 2 and "working directory" in inside.output
    assert _digest(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_failed_run_keeps_earlier_results_and_records_the_failure(tmp_path):
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    before = _digest(out)
    failed = _run(out, "--overwrite", "--set", "faults.party=owner-01",
                  "--set", "faults.kind=raise", "--set", "faults.occurrence=3")
    assert failed.exit_code == 3, failed.output
    assert "party 'owner-01' failed" in failed.output and "Traceback" not in failed.output
    text = " ".join(failed.output.split())
    assert f"kept in {tmp_path / 'res.failed-1'}" in text  # where to look
    assert "ppknn leakage" not in text  # its protocol did not complete: nothing to score
    assert _digest(out) == before
    record = json.loads((tmp_path / "res.failed-1" / FAILURE).read_text())
    assert record["error"] == "PartyFailure" and record["party"] == "owner-01"
    assert "RuntimeError: injected fault" in record["cause"]
    assert (tmp_path / "res.failed-1" / "transcript" / "totals.json").is_file()
    with pytest.raises(ConfigError, match="holds a failed run"):
        check_complete(tmp_path / "res.failed-1")


def test_bad_input_writes_nothing(tmp_path):
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    before = _digest(out)
    failed = _run(out, "--overwrite", "--set", "protocol.k=100000")  # k > training rows
    assert failed.exit_code == 2
    assert "larger than the union" in failed.output
    assert _digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]  # no failed-N, no staging


@pytest.mark.parametrize("bad, message", [
    ("file", "is an existing file"),
    ("under-file", "is a file, not a folder"),
])
def test_output_that_cannot_be_a_folder(tmp_path, bad, message):
    (tmp_path / "f").write_text("x")
    target = tmp_path / "f" if bad == "file" else tmp_path / "f" / "res"
    result = _run(target)
    assert result.exit_code == 2 and message in result.output
    assert (tmp_path / "f").read_text() == "x"


def test_leakage_refuses_an_incomplete_transcript(tmp_path):
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    (out / "transcript" / "totals.json").unlink()
    result = runner.invoke(app, ["leakage", str(out)])
    assert result.exit_code == 2 and "transcript is incomplete" in result.output


def test_staged_block_that_raises_leaves_no_partial_output(tmp_path):
    with pytest.raises(RuntimeError), staged(tmp_path / "x") as stage:
        (stage / "half.txt").write_text("half")
        raise RuntimeError("boom")
    assert (tmp_path / "x" / "half.txt").is_file()
    assert json.loads((tmp_path / "x" / FAILURE).read_text())["message"] == "boom"


@pytest.mark.parametrize("sig, kill_after_s", [
    *((signal.SIGKILL, t) for t in (0.3, 1.0, 2.0, 3.5, 6.0)),
    *((signal.SIGINT, t) for t in (0.5, 2.5, 5.0)),
])
def test_sigkill_at_any_point_never_touches_earlier_results(tmp_path, sig, kill_after_s):
    """An overwriting run killed or interrupted at any point leaves the earlier folder intact.

    SIGINT lets the run fail cleanly: what it recorded goes to ``res.failed-N`` with a
    ``failure.json`` (or, if it was interrupted before anything ran, nothing is written).
    """
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    before = _digest(out)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppknn", "run", "--runtime", "inprocess", "--output",
         str(out), "--overwrite", "--seed", "9", "--set", "data.max_queries=150"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(kill_after_s)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    after = _digest(out)
    seed = json.loads((out / "scenario.json").read_text())["run"]["seed"]
    if seed == 9:  # the new run completed before the kill: it replaced the folder whole
        check_complete(out)
    else:
        assert after == before
    failed = sorted(p.name for p in tmp_path.iterdir() if ".failed-" in p.name)
    for name in failed:  # an interrupted run says so
        folder = tmp_path / name
        record = json.loads((folder / FAILURE).read_text())
        assert record["error"] == "KeyboardInterrupt"
        if (folder / "transcript" / FAILURE).is_file() or not (folder / "public.json").is_file():
            with pytest.raises(ConfigError):  # interrupted before its protocols completed
                check_complete(folder)
            continue
        # interrupted after its protocols completed: its complete transcript is scored, or
        # refused by name if the interrupt came before its ground truth was written whole
        if (folder / "transcript" / "truth-ppknn-ring.npz").is_file():
            assert check_complete(folder)["error"] == "KeyboardInterrupt"
            assert recompute(folder)
        else:
            with pytest.raises(ConfigError, match="truth-ppknn-ring.npz"):
                check_complete(folder)


def test_a_failure_after_the_protocols_is_scorable_only_with_its_public_facts(tmp_path):
    """``check_complete``: a run that failed after a complete transcript returns its failure
    record once ``public.json`` was written, and is refused before that."""
    folder = tmp_path / "res"
    (folder / "transcript").mkdir(parents=True)
    (folder / "transcript" / "totals.json").write_text('{"messages": 0}')
    assert check_complete(folder) is None  # complete, not failed
    (folder / FAILURE).write_text(json.dumps({"message": "scorer broke"}))
    with pytest.raises(ConfigError, match="stopped before its public facts"):
        check_complete(folder)
    (folder / "public.json").write_text(json.dumps({"protocols": {"ppknn-ring": {}}}))
    with pytest.raises(ConfigError, match=r"ground truth \(transcript/truth-ppknn-ring.npz\)"):
        check_complete(folder)  # interrupted before its ground truth was saved: not scorable
    (folder / "transcript" / "truth-ppknn-ring.npz").write_bytes(b"")
    assert check_complete(folder)["message"] == "scorer broke"
    (folder / "transcript" / FAILURE).write_text(json.dumps({"message": "party died"}))
    with pytest.raises(ConfigError, match="party died"):
        check_complete(folder)  # failed while the protocol ran: never scored


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage-truth"])
def test_leakage_refuses_a_damaged_transcript_and_keeps_the_table(tmp_path, damage):
    """Parts deleted or truncated (totals.json says how many messages there were), or a
    damaged ground truth: exit 2 naming it, and leakage.csv / disclosure.csv untouched."""
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    parts = sorted((out / "transcript").glob("part-*.parquet"))
    if damage == "delete":
        for part in parts:
            part.unlink()
    elif damage == "truncate":
        parts[0].write_bytes(parts[0].read_bytes()[:100])
    else:
        (out / "transcript" / "truth-ppknn-ring.npz").write_bytes(b"not a zip")
    before = _digest(out)
    result = runner.invoke(app, ["leakage", str(out)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert {"delete": "totals.json counted", "truncate": "is damaged",
            "garbage-truth": "truth-ppknn-ring.npz"}[damage] in text
    assert _digest(out) == before
