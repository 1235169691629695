"""Nothing hidden: leftovers of killed runs are reported with how to remove them; a full
disk is a clean error (exit 2) naming the path, with the run's record visible."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.simulations.output import leftover_notes, leftovers, output_lock

runner = CliRunner()
QUICK = ["--runtime", "inprocess", "--set", "data.max_queries=8", "--set", "parties.n=4"]


def _run(args: list[str]):
    return runner.invoke(app, ["run", *args], catch_exceptions=False)


def _killed_run_leftovers(tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tmp_path / "res"
    partial = tmp_path / ".res.partial-0a1b2c3d"
    (partial / "transcript").mkdir(parents=True)
    (partial / "transcript" / "part-000000.parquet").write_bytes(b"x")
    old = tmp_path / ".res.old-deadbeef"
    old.mkdir()
    (tmp_path / ".res.partial-reproduce-xiong").mkdir()  # resumable: not a leftover
    (tmp_path / ".other.partial-0a1b2c3d").mkdir()  # another output's
    return out, partial, old


def test_leftovers_are_found_and_only_those(tmp_path):
    out, partial, old = _killed_run_leftovers(tmp_path)
    assert [(p, used) for p, _, used in leftovers(out)] == [(old, False), (partial, False)]
    notes = leftover_notes(out)
    assert len(notes) == 2 and f"rm -r {partial}" in notes[1] and "killed" in notes[1]
    assert partial.is_dir() and old.is_dir()  # reported, never removed


def test_leftovers_of_a_run_going_on_are_not_offered_for_removal(tmp_path):
    out, partial, _ = _killed_run_leftovers(tmp_path)
    with output_lock(out):  # a writer of this output is alive (here: this process)
        code = ("import sys; from pathlib import Path; "
                "from ppknn.simulations.output import leftover_notes; "
                "print('\\n'.join(leftover_notes(Path(sys.argv[1]))))")
        seen = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True,
                              text=True, check=True).stdout
    assert "going on now" in seen and "rm -r" not in seen
    assert "rm -r" in leftover_notes(out)[1]  # the lock went with its holder


def test_show_and_the_next_run_report_leftovers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _killed_run_leftovers(tmp_path)
    result = _run([*QUICK, "--output", "res"])  # relative: short lines, not wrapped
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "leftover:" in text and "rm -r .res.partial-0a1b2c3d" in text
    assert "rm -r .res.old-deadbeef" in text and "reproduce" not in text
    shown = runner.invoke(app, ["show", "res"])
    assert shown.exit_code == 0, shown.output
    assert "rm -r .res.partial-0a1b2c3d" in " ".join(shown.output.split())
    gone = runner.invoke(app, ["show", "nothing"])  # an output never completed: said too
    (tmp_path / ".nothing.partial-12345678").mkdir()
    gone = runner.invoke(app, ["show", "nothing"])
    assert gone.exit_code == 2 and "rm -r .nothing.partial-12345678" in " ".join(
        gone.output.split())
    # once removed, nothing is reported
    import shutil

    shutil.rmtree(tmp_path / ".res.partial-0a1b2c3d")
    shutil.rmtree(tmp_path / ".res.old-deadbeef")
    assert "leftover" not in runner.invoke(app, ["show", "res"]).output


def _mount_tmpfs(folder: Path, size: str) -> bool:
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    folder.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                           str(folder)], capture_output=True).returncode == 0


def _check_full_disk_run(disk: Path, result) -> None:
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "error: no space left on the device writing" in text and str(disk / "out") in text
    assert "Traceback" not in result.output
    hidden = [p.name for p in disk.iterdir() if p.name.startswith(".")]
    assert not hidden, hidden  # nothing hidden: the run's record is the output itself
    assert (disk / "out").is_dir()
    assert not _open_under(disk), _open_under(disk)  # nothing left open (it could not unmount)


def _open_under(folder: Path) -> list[str]:
    """Files under ``folder`` this process still holds open."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself used
            continue
        if target.startswith(str(folder) + os.sep):
            out.append(target)
    return out


def test_a_full_disk_is_exit_2_naming_the_path_nothing_hidden(tmp_path, monkeypatch):
    """On a 1 MiB tmpfs filled to 40 KiB free (root; a run of QUICK takes about 80 KiB of
    blocks without its plots), else with writes refused (ENOSPC)."""
    monkeypatch.chdir(tmp_path)
    disk = tmp_path / "disk"
    if _mount_tmpfs(disk, "1m"):
        try:
            (disk / "fill").write_bytes(b"\0" * (984 << 10))
            result = _run([*QUICK, "--output", str(disk / "out")])
            (disk / "fill").unlink()
            _check_full_disk_run(disk, result)
        finally:
            subprocess.run(["umount", str(disk)], check=False)
        return
    pytest.skip("cannot mount a tmpfs here (needs root on Linux)")


def test_a_full_disk_by_refused_writes(tmp_path, monkeypatch):
    """Every Parquet part write refused with ENOSPC: the same clean end."""
    import ppknn.core.transcript as transcript

    monkeypatch.chdir(tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()

    def full(path, table):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(transcript, "_write_part", full)
    result = _run([*QUICK, "--output", str(disk / "out")])
    assert result.exit_code == 2, result.output
    assert "no space left on the device" in result.output
    assert not [p for p in disk.iterdir() if p.name.startswith(".")]
    record = json.loads((disk / "out" / "failure.json").read_text())
    assert "No space left" in record["message"]
