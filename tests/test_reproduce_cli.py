"""`ppknn reproduce NAME --quick` never touches tracked files (reports go to the output folder)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppknn.simulations.cli import app
from ppknn.simulations.reproduce import REPRODUCTIONS

ROOT = Path(__file__).resolve().parents[1]


def _tracked_changes() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPRODUCTIONS))
def test_quick_reproduction_leaves_tracked_files_alone(name, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # as a user would run it, from the checkout
    before = _tracked_changes()
    result = CliRunner().invoke(app, ["reproduce", name, "--quick", "--output",
                                      str(tmp_path / name)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / name / f"{name}.md").is_file()
    assert _tracked_changes() == before
