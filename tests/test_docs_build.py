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
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "api").mkdir()
    (docs / "hooks.py").write_text((ROOT / "docs" / "hooks.py").read_text()
                                   .replace("Path(__file__).resolve().parent.parent",
                                            f"Path({str(ROOT)!r})"))
    (docs / "api" / "index.md").write_text("# x\n\n::: ppknn.api.no_such_function\n")
    text = CONFIG.read_text()
    head, rest = text.split("nav:", 1)
    rest = rest[rest.index("theme:"):]
    (docs / "mkdocs.yml").write_text(head + "nav:\n  - Overview: index.md\n" + rest)
    done = _build(docs / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no_such_function" in done.stdout + done.stderr
