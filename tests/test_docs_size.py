"""The files tracked under ``docs/`` stay within 3 MB, so the committed reports cannot grow
back unseen: a new report ships its figures as the palette PNGs every run writes, and keeps
one full run of a reproduction (others: the report and a few figures)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 3_000_000
"""Bytes (decimal megabytes) the files tracked under ``docs/`` may take together."""
BUILD_OUTPUTS = frozenset({"site", "__pycache__", ".cache"})
"""Folders under ``docs/`` that a build or an import writes (never tracked)."""


def docs_files(root: Path) -> list[Path]:
    """The files of ``root/docs`` that git tracks; without git (a source tarball), every
    file under it outside :data:`BUILD_OUTPUTS`."""
    if shutil.which("git") and (root / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z", "--", "docs"], cwd=root,
                                capture_output=True, check=True).stdout
        return [root / name for name in listed.decode().split("\0") if name]
    return [path for path in sorted((root / "docs").rglob("*"))
            if path.is_file() and not BUILD_OUTPUTS & set(path.relative_to(root).parts)]


def over_budget(root: Path, limit: int = LIMIT) -> str | None:
    """None if the docs fit in ``limit`` bytes; otherwise what they take, by folder."""
    sizes: Counter[str] = Counter()
    for path in docs_files(root):
        if path.is_file():  # a tracked file deleted in the working tree takes nothing
            parts = path.relative_to(root).parts
            sizes["/".join(parts[:2]) if len(parts) > 2 else "docs/ (top level)"] += \
                path.stat().st_size
    total = sum(sizes.values())
    if total <= limit:
        return None
    largest = ", ".join(f"{name} {size:,}" for name, size in sizes.most_common(6))
    return f"docs/ tracks {total:,} bytes, over the {limit:,} allowed ({largest})"


def test_the_tracked_docs_fit_in_three_megabytes():
    problem = over_budget(ROOT)
    assert problem is None, problem


def test_the_budget_names_the_folders_that_broke_it(tmp_path):
    (tmp_path / "docs" / "reproductions" / "paper").mkdir(parents=True)
    (tmp_path / "docs" / "reproductions" / "paper" / "f.png").write_bytes(b"x" * 700)
    (tmp_path / "docs" / "index.md").write_bytes(b"x" * 200)
    assert over_budget(tmp_path, limit=900) is None
    assert over_budget(tmp_path, limit=899) == (
        "docs/ tracks 900 bytes, over the 899 allowed "
        "(docs/reproductions 700, docs/ (top level) 200)")


def test_without_git_the_build_outputs_do_not_count(tmp_path):
    for name, size in (("docs/manual/a.md", 10), ("docs/site/index.html", 5000),
                       ("docs/__pycache__/hooks.pyc", 5000), ("docs/hooks.py", 7)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in docs_files(tmp_path)) == [
        "docs/hooks.py", "docs/manual/a.md"]
    assert over_budget(tmp_path, limit=17) is None


def test_with_git_only_tracked_files_count(tmp_path):
    if not shutil.which("git"):
        return
    for name in ("docs/manual/a.md", "docs/untracked.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * 10)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "docs/manual/a.md"], cwd=tmp_path, check=True)
    assert docs_files(tmp_path) == [tmp_path / "docs" / "manual" / "a.md"]
