"""`ppknn reproduce NAME --overwrite`: its staging folder survives a kill and is resumed.

The old complete folder stays untouched until the new run is complete; the next
`--overwrite` of the same output and settings resumes from the staged rows (other
settings are refused, never mixed in); two runs never write one output at once.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.simulations import reproduce

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args: object):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def flat(result) -> str:
    return " ".join(result.output.split())


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def hidden(parent: Path, name: str) -> list[str]:
    """The hidden folders and files a run of output ``name`` left beside it."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


class FakeReproduction:
    """Stands in for a reproduction module: one kept row per call, like zafarani's store."""

    def __init__(self, fail: bool = False):
        self.calls: list[Path] = []
        self.fail = fail

    def run(self, output, *, quick, runtime, report, log=None):
        output = Path(output)
        self.calls.append(output)
        store = output / reproduce.ROWS / "accuracy.jsonl"
        store.parent.mkdir(parents=True, exist_ok=True)
        with store.open("a") as handle:
            handle.write(json.dumps({"key": f"k{len(self.calls)}", "row": {"quick": quick}})
                         + "\n")
        if self.fail:
            raise KeyboardInterrupt
        (output / "figure.csv").write_text(f"quick\n{quick}\n")
        Path(report).write_text("# report\n")
        return Path(report)


@pytest.fixture
def fake(monkeypatch):
    def install(fail: bool = False) -> FakeReproduction:
        module = FakeReproduction(fail)
        monkeypatch.setattr(reproduce, "load", lambda name: module)
        return module

    return install


def kept_rows(folder: Path) -> list[str]:
    return (folder / reproduce.ROWS / "accuracy.jsonl").read_text().splitlines()


# --------------------------------------------------------------- interrupted, then resumed
def test_an_interrupted_overwrite_keeps_its_rows_in_a_fixed_staging_folder(tmp_path, fake):
    x = tmp_path / "x"
    fake()
    assert invoke("reproduce", "xiong", "--output", x).exit_code == 0
    before = digest(x)
    fake(fail=True)
    stopped = invoke("reproduce", "xiong", "--output", x, "--overwrite", "--quick")
    assert stopped.exit_code == 130
    stage = tmp_path / ".x.partial-reproduce-xiong"
    assert digest(x) == before  # the old complete folder is untouched
    assert kept_rows(stage) and (stage / "failure.json").is_file()
    assert hidden(tmp_path, "x") == [".x.partial-reproduce-xiong"]  # no lock left behind
    text = flat(stopped)
    assert f"running in {stage}" in text  # said before the run: a killed run cannot say it
    command = f"ppknn reproduce xiong --output {x} --overwrite --quick"
    assert f"{stage} keeps its 1 finished run ({x} is untouched); the same command " \
           f"resumes there: {command}" in text

    resumed_by = fake()
    result = invoke("reproduce", "xiong", "--output", x, "--overwrite", "--quick")
    assert result.exit_code == 0, result.output
    assert f"resuming the unfinished --overwrite run kept in {stage}, reusing its 1 finished " \
           "run" in flat(result)
    assert resumed_by.calls == [stage]
    assert len(kept_rows(x)) == 2  # the kept row and the new one: resumed, not afresh
    assert json.loads((x / "reproduction.json").read_text())["finished"] is True
    assert not (x / "failure.json").exists() and (x / "xiong.md").is_file()
    assert hidden(tmp_path, "x") == []  # the staging folder became x; the old one is gone


def test_a_run_stopped_after_it_finished_but_before_the_swap_is_completed(tmp_path, fake):
    x = tmp_path / "x"
    fake()
    invoke("reproduce", "xiong", "--output", x)
    fake(fail=True)
    invoke("reproduce", "xiong", "--output", x, "--overwrite")
    stage = tmp_path / ".x.partial-reproduce-xiong"
    record = json.loads((stage / "reproduction.json").read_text())
    (stage / "reproduction.json").write_text(json.dumps({**record, "finished": True}))
    (stage / "xiong.md").write_text("# report\n")  # as a run killed before the swap leaves it
    module = fake()
    result = invoke("reproduce", "xiong", "--output", x, "--overwrite")
    assert result.exit_code == 0, result.output
    assert f"completing the --overwrite run kept in {stage}, which finished" in flat(result)
    assert module.calls == [stage] and len(kept_rows(x)) == 2
    assert hidden(tmp_path, "x") == []


def test_other_settings_are_refused_and_never_mixed_with_the_staged_rows(tmp_path, fake):
    x = tmp_path / "x"
    fake()
    invoke("reproduce", "xiong", "--output", x)
    fake(fail=True)
    invoke("reproduce", "xiong", "--output", x, "--overwrite", "--quick")
    stage = tmp_path / ".x.partial-reproduce-xiong"
    before, staged = digest(x), digest(stage)

    full = fake()
    result = invoke("reproduce", "xiong", "--output", x, "--overwrite")
    assert result.exit_code == 2, result.output
    text = flat(result)
    assert f"'{stage}' keeps an unfinished --overwrite run of output '{x}' with other " \
           "settings (quick True there, False here)" in text
    assert f"`ppknn reproduce xiong --output {x} --overwrite --quick` resumes it" in text
    assert "delete that folder to start afresh" in text
    assert full.calls == [] and digest(x) == before and digest(stage) == staged

    other_runtime = invoke("reproduce", "xiong", "--output", x, "--overwrite", "--quick",
                           "--runtime", "ray")
    assert other_runtime.exit_code == 2 and "runtime 'inprocess' there, 'ray' here" in \
        flat(other_runtime)
    assert full.calls == [] and digest(stage) == staged


def test_a_plain_run_points_to_the_staged_run(tmp_path, fake):
    x = tmp_path / "x"
    fake()
    invoke("reproduce", "xiong", "--output", x)
    fake(fail=True)
    invoke("reproduce", "xiong", "--output", x, "--overwrite", "--quick")
    result = invoke("reproduce", "xiong", "--output", x)
    assert result.exit_code == 2
    assert f"`ppknn reproduce xiong --output {x} --overwrite --quick`" in flat(result)


def test_the_staging_folder_belongs_to_one_output_and_one_reproduction(tmp_path, fake):
    x, y = tmp_path / "x", tmp_path / "y"
    fake()
    invoke("reproduce", "xiong", "--output", x)
    invoke("reproduce", "xiong", "--output", y)
    fake(fail=True)
    invoke("reproduce", "xiong", "--output", x, "--overwrite")
    stage = tmp_path / ".x.partial-reproduce-xiong"
    staged = digest(stage)

    other_output = fake()
    assert invoke("reproduce", "xiong", "--output", y, "--overwrite").exit_code == 0
    assert other_output.calls == [tmp_path / ".y.partial-reproduce-xiong"]
    assert len(kept_rows(y)) == 1  # afresh: x's staged row is not y's

    other_name = fake()
    assert invoke("reproduce", "gursoy", "--output", x, "--overwrite").exit_code == 0
    assert other_name.calls == [tmp_path / ".x.partial-reproduce-gursoy"]
    assert len(kept_rows(x)) == 1
    assert digest(stage) == staged  # xiong's staged run is left as it was


def test_a_staging_folder_ppknn_did_not_leave_is_never_touched(tmp_path, fake):
    x = tmp_path / "x"
    fake()
    invoke("reproduce", "xiong", "--output", x)
    stage = tmp_path / ".x.partial-reproduce-xiong"
    stage.mkdir()
    (stage / "notes.txt").write_text("mine\n")
    module = fake()
    result = invoke("reproduce", "xiong", "--output", x, "--overwrite")
    assert result.exit_code == 2 and "it is never touched: move or delete it" in flat(result)
    assert module.calls == [] and (stage / "notes.txt").read_text() == "mine\n"


# ------------------------------------------------------------------------ one at a time
BLOCKING = textwrap.dedent("""
    import sys, time
    from pathlib import Path

    from ppknn.simulations import reproduce
    from ppknn.cli import main

    signals = Path(sys.argv[1])

    class Blocking:
        def run(self, output, *, quick, runtime, report, log=None):
            rows = Path(output) / "grid-rows"
            rows.mkdir(parents=True, exist_ok=True)
            (rows / "accuracy.jsonl").write_text('{"key": "first", "row": {}}\\n')
            (signals / "started").touch()
            while not (signals / "go").exists():
                time.sleep(0.05)
            (Path(output) / "figure.csv").write_text("first\\n")
            Path(report).write_text("# first\\n")
            return Path(report)

    reproduce.load = lambda name: Blocking()
    sys.argv = ["ppknn", "reproduce", "xiong", "--output", sys.argv[2], "--overwrite"]
    main()
""")


def test_a_second_run_of_the_same_output_is_refused_while_the_first_runs(tmp_path, fake):
    x = tmp_path / "x"
    fake()
    invoke("reproduce", "xiong", "--output", x)
    signals = tmp_path / "signals"
    signals.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([sys.executable, "-c", BLOCKING, str(signals), str(x)],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (signals / "started").exists():
            assert first.poll() is None, first.stdout.read() if first.stdout else ""
            assert time.monotonic() < deadline, "the first run never started"
            time.sleep(0.05)
        second = fake()
        for extra in ((), ("--quick",)):  # the same settings, and other ones
            result = invoke("reproduce", "xiong", "--output", x, "--overwrite", *extra)
            assert result.exit_code == 2, result.output
            text = flat(result)
            assert f"output '{x}' is being written by process {first.pid}" in text
        plain = invoke("reproduce", "xiong", "--output", x)
        assert plain.exit_code == 2 and "is being written by" in flat(plain)
        assert second.calls == []
    finally:
        (signals / "go").touch()
        out, _ = first.communicate(timeout=60)
    assert first.returncode == 0, out
    assert (x / "figure.csv").read_text() == "first\n"  # the first run's, whole
    assert kept_rows(x) == ['{"key": "first", "row": {}}']
    assert hidden(tmp_path, "x") == []


# ------------------------------------------------------------- a real kill, a real resume
def _csv_without_timings(path: Path) -> list[list[str]]:
    """The rows of a CSV without its wall-clock columns (``seconds``: they differ per run)."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    keep = [i for i, name in enumerate(rows[0]) if name != "seconds"]
    return [[row[i] for i in keep if i < len(row)] for row in rows]


@pytest.mark.slow
def test_a_killed_overwrite_resumes_and_matches_an_uninterrupted_run(tmp_path,
                                                                     quick_reproduction):
    # the session's uninterrupted `ppknn reproduce zafarani --quick` (tests/conftest.py) is
    # both the old complete folder and the run the resumed one must equal
    reference = quick_reproduction("zafarani")
    assert reference.exit_code == 0, reference.cli_output
    x = tmp_path / "x"
    shutil.copytree(reference.output, x)
    before = digest(x)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.Popen([sys.executable, "-m", "ppknn", "reproduce", "zafarani",
                               "--quick", "--output", str(x), "--overwrite"],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    stores: list[Path] = []
    while not any(len(s.read_text().splitlines()) >= 10 for s in stores):
        assert killed.poll() is None, "the run ended before it could be killed mid-run"
        assert time.monotonic() < deadline, "no finished rows in the staging folder"
        time.sleep(0.02)
        stores = list(tmp_path.glob(".x.partial-*/grid-rows/accuracy.jsonl"))
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert digest(x) == before  # nothing of the old complete results was touched
    [store] = stores
    kept = store.read_text()
    kept = kept[:kept.rfind("\n") + 1]  # complete lines (a killed run may tear the last)
    assert kept.count("\n") >= 10

    result = invoke("reproduce", "zafarani", "--quick", "--output", x, "--overwrite")
    assert result.exit_code == 0, result.output
    assert "resuming the unfinished --overwrite run kept in" in flat(result)
    resumed = (x / reproduce.ROWS / "accuracy.jsonl").read_text()
    assert resumed.startswith(kept)  # the killed run's rows were reused, not run again
    assert hidden(tmp_path, "x") == []  # swapped in; no staging folder, old folder or lock
    tables = sorted(p.relative_to(reference.output) for p in reference.output.rglob("*.csv"))
    assert tables and tables == sorted(p.relative_to(x) for p in x.rglob("*.csv"))
    for table in tables:
        assert _csv_without_timings(x / table) == \
            _csv_without_timings(reference.output / table), table
