"""Output safety: nothing a user holds is lost to a ppknn command.

One test per way a results folder could destroy someone's files: ``--overwrite``
aimed at a home folder or a project folder (a common file name is no proof of
ownership), a folder that appears at the output while a run goes on, two runs
into one output at once, a truthy non-bool ``overwrite``, a run name that makes
``results/`` itself the output, ``ppknn leakage`` on a folder holding symbolic
links, and a symbolic link planted as an output's lock file. Each test fails on
a version that decides ownership by file name, swaps without checking again,
takes no lock, or writes through links.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ppknn
from ppknn.cli import app
from ppknn.core.errors import ConfigError
from ppknn.simulations import pipeline as results_module
from ppknn.simulations.output import (
    MARKER,
    OutputConflict,
    holds_output,
    output_lock,
    staged,
    swap_in,
)

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
SMALL = ("--set", "data.max_queries=20")


def _digest(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (links as their target text, not followed)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            out[key] = "link:" + os.readlink(p)
        elif p.is_file():
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[key] = "dir"
    return out


def _run(out: Path, *extra: str):
    return runner.invoke(app, ["run", "--runtime", "inprocess", "--output", str(out), *SMALL,
                               *extra])


def _flat(result) -> str:
    return " ".join(result.output.split())


# ------------------------------------------------------------- 1-2: what --overwrite may replace
def test_overwrite_never_replaces_the_home_folder(tmp_path, monkeypatch):
    """Case 1: ``--output ~ --overwrite`` with a ppknn-looking file in the home folder."""
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / ".bashrc").write_text("export PATH\n")
    (home / "Documents" / "thesis.odt").write_text("years of work")
    (home / "summary.json").write_text("{}")  # a common name: no proof of ownership
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    before = _digest(home)
    result = _run(home, "--overwrite")
    assert result.exit_code == 2, result.output
    assert "is the home folder" in _flat(result) and "never" in _flat(result)
    assert _digest(home) == before
    (home / MARKER).write_text("written by ppknn; --overwrite may replace this folder\n")
    before = _digest(home)
    assert _run(home, "--overwrite").exit_code == 2  # not even with ppknn's marker
    assert _digest(home) == before


def test_overwrite_never_replaces_a_project_folder_holding_a_scenario_json(tmp_path):
    """Case 2: a project with ``scenario.json`` and ``src/`` kept whole under --overwrite."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('mine')\n")
    (project / "scenario.json").write_text("{}")
    before = _digest(project)
    result = _run(project, "--overwrite")
    assert result.exit_code == 2, result.output
    text = _flat(result)
    assert "holds no ppknn output" in text and "remove it by hand" in text
    assert _digest(project) == before
    assert not holds_output(project)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_only_a_marked_or_an_all_results_folder_is_ppknns(tmp_path):
    """The marker must be ppknn's file; an unmarked folder counts only with results files."""
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / MARKER).write_text("something else\n")
    assert not holds_output(folder)  # a file of that name saying something else
    (folder / MARKER).unlink()
    os.symlink(tmp_path / "elsewhere", folder / MARKER)
    assert not holds_output(folder)  # a link is not ppknn's marker
    (folder / MARKER).unlink()
    (folder / "audit.json").write_text("{}")
    (folder / "audit.csv").write_text("a\n")
    assert holds_output(folder)  # an older ppknn's audit folder
    for odd in (".hidden", "notes.docx"):
        (folder / odd).write_text("x")
        assert not holds_output(folder)
        (folder / odd).unlink()
    (folder / "transcript").mkdir()
    os.symlink(tmp_path, folder / "transcript" / "link.json")
    assert not holds_output(folder)


# ------------------------------------------------------------- 3: a folder appearing meanwhile
@pytest.mark.parametrize("appears", ["user-folder", "empty-folder", "ppknn-folder"])
def test_a_folder_that_appears_during_the_run_is_kept(tmp_path, monkeypatch, appears):
    """Case 3: the final rename never replaces what appeared at the output meanwhile."""
    out = tmp_path / "res"
    real = results_module.run_scenario

    def run_then_appear(*args, **kwargs):
        done = real(*args, **kwargs)
        out.mkdir()
        if appears == "user-folder":
            (out / "notes.txt").write_text("written meanwhile")
        elif appears == "ppknn-folder":
            (out / MARKER).write_text("written by ppknn; --overwrite may replace this folder\n")
            (out / "summary.json").write_text('{"other": "run"}')
        return done

    monkeypatch.setattr(results_module, "run_scenario", run_then_appear)
    before = None
    result = _run(out)
    before = _digest(out)
    assert result.exit_code == 2, result.output
    kept = tmp_path / "res.new-1"
    text = _flat(result)
    assert "appeared while the run went on" in text and str(kept) in text
    assert _digest(out) == before and len(before) == {"user-folder": 1, "empty-folder": 0,
                                                      "ppknn-folder": 2}[appears]
    assert (kept / "summary.json").is_file() and (kept / MARKER).is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_overwrite_keeps_a_user_folder_that_replaced_the_output_meanwhile(tmp_path):
    """With --overwrite the old folder is checked again at the swap: a user's is kept."""
    out = tmp_path / "res"
    with staged(out) as stage:
        (stage / "summary.json").write_text("{}")
    with pytest.raises(OutputConflict, match="holds files that are not ppknn output") as caught:
        with staged(out, overwrite=True) as stage:
            (stage / "summary.json").write_text('{"new": true}')
            for p in out.iterdir():
                p.unlink()
            (out / "mine.odt").write_text("mine")
    assert sorted(p.name for p in out.iterdir()) == ["mine.odt"]
    assert caught.value.kept_folder == tmp_path / "res.new-1"
    assert json.loads((tmp_path / "res.new-1" / "summary.json").read_text()) == {"new": True}


# ------------------------------------------------------------- 4: two runs into one output
def test_a_run_into_an_output_whose_lock_is_held_is_refused(tmp_path):
    """Case 4 (deterministic): a second writer of one output is refused, exit 2."""
    out = tmp_path / "res"
    with output_lock(out):
        result = _run(out)
    assert result.exit_code == 2, result.output
    assert "is being written by process" in _flat(result)
    assert not out.exists()
    with output_lock(out), pytest.raises(ConfigError, match="being written"):
        ppknn.run({"runtime": {"kind": "inprocess"}}, output=out)


def test_two_concurrent_runs_into_one_output_never_both_succeed(tmp_path):
    """Case 4 (a real race): one run writes the folder, the other is refused (exit 2)."""
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "ppknn", "run", "--runtime", "inprocess",
                               "--output", str(out), "--seed", str(seed), *SMALL],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for seed in (1, 2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], outputs
    winner = (1, 2)[codes.index(0)]
    refused = " ".join(outputs[codes.index(2)].split())
    assert "being written by process" in refused or "already holds results" in refused
    assert json.loads((out / "scenario.json").read_text())["run"]["seed"] == winner
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------- 5: typed API flags
@pytest.mark.parametrize("bad", ["no", "False", 1, 0, None, 1.0])
def test_overwrite_takes_a_bool_only(tmp_path, bad):
    """Case 5: ``ppknn.run(..., overwrite="no")`` is refused, naming the value."""
    out = tmp_path / "res"
    with staged(out) as stage:
        (stage / "summary.json").write_text('{"kept": true}')
    before = _digest(out)
    with pytest.raises(TypeError, match=rf"overwrite = {bad!r}: allowed: True or False"):
        ppknn.run({"runtime": {"kind": "inprocess"}}, output=out, overwrite=bad)
    with pytest.raises(TypeError, match="overwrite = "):
        ppknn.sweep({"sweep": {"seeds": [0]}}, output=out, overwrite=bad)
    assert _digest(out) == before


# ------------------------------------------------------------- 6-7: run names
@pytest.mark.parametrize("name", ["", " ", "..", "a/b", "../../x", "a\\b"])
def test_a_run_name_that_is_not_a_folder_name_is_refused(tmp_path, monkeypatch, name):
    """Cases 6-7: a run named ``""`` would make ``results/`` itself the output (and its
    --overwrite would delete every other run there)."""
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "results" / "earlier"
    other.mkdir(parents=True)
    (other / "summary.json").write_text("{}")
    before = _digest(tmp_path / "results")
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'[run]\nname = {json.dumps(name)}\n[runtime]\nkind = "inprocess"\n')
    for extra in ((), ("--overwrite",)):
        result = runner.invoke(app, ["run", str(scenario), *SMALL, *extra])
        assert result.exit_code == 2, result.output
        assert f"name = {name!r}" in _flat(result) and "Traceback" not in result.output
        assert _digest(tmp_path / "results") == before


def test_overwrite_of_a_folder_holding_other_runs_is_refused(tmp_path):
    """Case 7: ``results/`` itself (holding runs) is not one run's folder."""
    results = tmp_path / "results"
    for name in ("a", "b"):
        with staged(results / name) as stage:
            (stage / "summary.json").write_text("{}")
    before = _digest(results)
    result = _run(results, "--overwrite")
    assert result.exit_code == 2 and "holds no ppknn output" in _flat(result)
    assert _digest(results) == before


# ------------------------------------------------------------- 8: leakage and symbolic links
def test_leakage_never_writes_through_a_link_in_the_folder(tmp_path):
    """Case 8: links named leakage.csv / .png / disclosure.csv point outside; their targets
    stay as they were, the folder gets its own files."""
    out = tmp_path / "res"
    assert _run(out).exit_code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    names = ("leakage.csv", "leakage.svg", "disclosure.csv", ".summary.json.partial")
    for name in names:
        (outside / name).write_text("precious")
        (out / name).unlink(missing_ok=True)
        os.symlink(outside / name, out / name)
    result = runner.invoke(app, ["leakage", str(out)])
    assert result.exit_code == 0, result.output
    assert all((outside / name).read_text() == "precious" for name in names)
    for name in names[:3]:
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    assert not [p for p in out.iterdir() if p.name.startswith(".rewrite-")]


# ------------------------------------------------------------- 9: a linked lock file
def test_a_symlinked_lock_file_is_refused_and_its_target_kept(tmp_path):
    """Case 9: ``.NAME.lock`` linked to a user's file: refused, the file not truncated."""
    target = tmp_path / "precious.txt"
    target.write_text("do not truncate")
    out = tmp_path / "x"
    os.symlink(target, tmp_path / ".x.lock")
    with pytest.raises(ConfigError, match="is a symbolic link, never followed"), \
            output_lock(out):
        pass
    result = _run(out)
    assert result.exit_code == 2 and "symbolic link" in _flat(result)
    result = runner.invoke(app, ["reproduce", "xiong", "--output", str(out)])
    assert result.exit_code == 2 and "symbolic link" in _flat(result)
    assert target.read_text() == "do not truncate"
    assert not out.exists()


# ------------------------------------------------------------- the rest of the contract
def test_swap_in_refuses_what_appeared_without_overwrite(tmp_path):
    stage, folder = tmp_path / ".f.partial", tmp_path / "f"
    stage.mkdir()
    (stage / "summary.json").write_text("{}")
    folder.mkdir()
    with pytest.raises(OutputConflict, match="appeared while the run went on"):
        swap_in(stage, folder, overwrite=False)
    assert list(folder.iterdir()) == [] and (tmp_path / "f.new-1" / "summary.json").is_file()


def test_a_failed_run_is_marked_and_replaced_by_overwrite(tmp_path):
    out = tmp_path / "res"
    with pytest.raises(RuntimeError), staged(out) as stage:
        (stage / "half.txt").write_text("half")
        raise RuntimeError("boom")
    assert holds_output(out)
    with staged(out, overwrite=True) as stage:
        (stage / "summary.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "summary.json"]


def test_an_output_that_is_a_link_is_refused(tmp_path):
    real = tmp_path / "real"
    with staged(real) as stage:
        (stage / "summary.json").write_text("{}")
    os.symlink(real, tmp_path / "link")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for link in ("link", "dangling"):
        result = _run(tmp_path / link, "--overwrite")
        assert result.exit_code == 2 and "is a symbolic link" in _flat(result), result.output
    assert (real / "summary.json").is_file()
