"""The API reference builds from the docstrings with warnings as errors (mkdocs --strict)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "docs" / "mkdocs.yml"

pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed "
                    "(pip install -e '.[docs]'; the test extra includes it)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_api_reference_builds_strict(tmp_path):
    done = _build(CONFIG, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "site" / "estimators" / "index.html").read_text()
    for name in ("PPKNNClassifier", "DPKNeighborsClassifier", "PCALaplaceSanitizer",
                 "DPTTClassifier", "DPNaiveBayes"):
        assert name in page, name
    api = (tmp_path / "site" / "python-api" / "index.html").read_text()
    assert "ppknn.api.run" in api and "overwrite" in api
    assert list(tmp_path.iterdir()) == [tmp_path / "site"]


def test_a_broken_reference_fails_the_build(tmp_path):
    """The same strict settings on a one-module package: a missing object fails the build."""
    src = tmp_path / "src" / "tinypkg"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text('"""A tiny package."""\n\n\ndef f() -> int:\n'
                                     '    """Return one."""\n    return 1\n')
    docs = tmp_path / "docs"
    (docs / "api").mkdir(parents=True)
    (docs / "api" / "index.md").write_text("# x\n\n::: tinypkg.f\n\n::: tinypkg.no_such\n")
    text = "\n".join(line for line in CONFIG.read_text().splitlines() if "hooks" not in line)
    head, rest = text.split("nav:", 1)
    rest = rest[rest.index("theme:"):].replace("          options:\n",
                                               f"          paths: [{str(src.parent)!r}]\n"
                                               "          options:\n")
    (docs / "mkdocs.yml").write_text(head + "\nnav:\n  - Overview: index.md\n" + rest)
    done = _build(docs / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "tinypkg.no_such" in done.stdout + done.stderr
    (docs / "api" / "index.md").write_text("# x\n\n::: tinypkg.f\n")  # and the fix passes
    assert _build(docs / "mkdocs.yml", tmp_path / "site2").returncode == 0
