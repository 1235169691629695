"""CI runs what a user runs: the README's two command lines, exactly, and nothing of ../shared."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ppknn.core.data import SHIPPED_DIR, available_datasets, load_dataset

ROOT = Path(__file__).resolve().parents[1]


def _readme_lines() -> list[str]:
    first_block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [line.strip() for line in first_block.group(1).splitlines() if line.strip()]


def _ci_line(name: str) -> str:
    match = re.search(rf"^{name}='(.*)'$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert match, f".ci/run defines no {name}"
    return match.group(1)


def test_the_readme_starts_with_the_two_commands_ci_runs():
    assert _readme_lines() == [_ci_line("LINE1"), _ci_line("LINE2")]


def test_ci_runs_line_one_non_editable_from_the_root_of_a_copy_with_nothing_beside_it():
    script = (ROOT / ".ci" / "run").read_text()
    assert "pip install . &&" in _ci_line("LINE1") and "-e" not in _ci_line("LINE1")
    assert 'bash -euo pipefail -c "$LINE1"' in script
    assert 'bash -euo pipefail -c "$LINE2"' in script
    assert "mktemp -d" in script and "unset PPKNN_DATA_DIR" in script


def test_ci_runs_the_suite_again_with_the_tutorial_protocol_installed():
    """After line 2, in its venv: examples/dp_count installed, its tests, the whole suite."""
    script = (ROOT / ".ci" / "run").read_text()
    tail = script.split('bash -euo pipefail -c "$LINE2"', 1)[1].splitlines()
    steps = [line.strip() for line in tail if line.strip() and not line.startswith("echo")]
    assert steps == [". .venv/bin/activate", "pip install -q ./examples/dp_count",
                     steps[2], "python -m pytest -q -p no:cacheprovider examples/dp_count/tests",
                     "python -m pytest -q -p no:cacheprovider"]
    assert '"dp-count" in ppknn.protocol_names()' in steps[2]
    entry = tomllib.loads((ROOT / "examples" / "dp_count" / "pyproject.toml").read_text())
    assert entry["project"]["entry-points"]["ppknn.protocols"] == {
        "dp-count": "dp_count.plugin:DPCount"}


def test_nothing_in_the_project_reads_the_shared_folder():
    """No code, test, scenario or CI file names ../shared (the folder may disappear)."""
    pattern = re.compile(r"""\.\./shared|["']shared["']\s*/|/\s*["']shared["']""")
    offenders = []
    for folder in ("core", "parties", "protocols", "simulations", "ppknn", "tests",
                   "benchmarks", "scenarios", ".ci"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".toml", ".sh", ""} and path.is_file() \
                    and path != Path(__file__).resolve():
                text = path.read_text(errors="ignore")
                if pattern.search(text):
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_shipped_datasets_are_package_data():
    """Every file the shipped manifest names exists and matches a package-data glob."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["ppknn.core"]
    names = [n for n in available_datasets() if ":" not in n]
    assert {"pima", "abalone", "adult", "banknote", "glass", "ionosphere", "iris", "phoneme",
            "seeds", "wine"} <= set(names)
    for path in SHIPPED_DIR.iterdir():
        assert any(path.relative_to(SHIPPED_DIR.parent).match(g) for g in globs), path
    assert load_dataset("seeds").X.shape == (210, 7)


def test_every_package_folder_is_installed():
    """A package folder missing from pyproject's list would be absent from `pip install .`
    (an editable install hides it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    dirs = config["package-dir"]
    found = set()
    for package, folder in dirs.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    assert found == listed
