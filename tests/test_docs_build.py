"""The docs site -- the manual, the API reference generated from the docstrings and the
committed reports -- builds with warnings as errors (mkdocs --strict).

Every page of ``docs/manual/`` is in the navigation and in the build (their examples run in
``tests/test_readme.py``); a link to a missing page, heading or report fails the build. The
docstrings' Sphinx roles (``:class:`X```) become links (``docs/roles.py``), and a build
leaves the checkout's ``git status`` as it was.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "docs" / "mkdocs.yml"

pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed "
                    "(pip install -e '.[docs]'; the test extra includes it)")


def _build(config: Path, site: Path | None) -> subprocess.CompletedProcess:
    # no -q: mkdocs 1.6 counts the warnings strict mode fails on through its log, and -q
    # hides them from it (a quiet strict build of a page with a broken anchor succeeds)
    where = [] if site is None else ["-d", str(site)]
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), *where],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


#: A Sphinx role printed as text: ``:class:`X``` in the HTML is ``:class:<code>X</code>``.
LITERAL_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):"
                          r"(?:<code>|`|&#96;)")


def _literal_roles(site: Path) -> dict[str, int]:
    found = {}
    for page in site.rglob("*.html"):
        text = page.read_text()
        if hits := len(LITERAL_ROLE.findall(text)) + text.count("data-ppknn-role"):
            found[str(page.relative_to(site))] = hits
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The reference built once, with the site's own configuration, into a temp folder."""
    out = tmp_path_factory.mktemp("docs") / "site"
    done = _build(CONFIG, out)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_api_reference_builds_strict(site):
    page = (site / "estimators" / "index.html").read_text()
    for name in ("PPKNNClassifier", "DPKNeighborsClassifier", "PCALaplaceSanitizer",
                 "DPTTClassifier", "DPNaiveBayes"):
        assert name in page, name
    api = (site / "python-api" / "index.html").read_text()
    assert "ppknn.api.run" in api and "overwrite" in api
    assert list(site.parent.iterdir()) == [site]


MANUAL = ROOT / "docs" / "manual"


def test_every_manual_page_is_in_the_nav_and_built(site):
    nav = CONFIG.read_text().split("nav:", 1)[1].split("theme:", 1)[0]
    for page in MANUAL.glob("*.md"):
        assert f": {page.name}" in nav, page.name
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), built
    for page in ("writing-a-protocol", "protocols", "leakage", "scaling", "performance",
                 "limitations", "architecture", "reproducing", "comparing", "install"):
        assert (site / page / "index.html").is_file(), page


def test_the_reports_and_figures_are_in_the_site(site):
    """``docs/reports.py`` adds the committed reports; the manual's links to them resolve."""
    for name in ("xiong", "gursoy", "lepert", "mukherjee", "zafarani"):
        report = site / "reproductions" / name / "index.html"
        assert report.is_file(), name
        assert '<img alt="' in report.read_text()
    assert (site / "benchmarks" / "idle-10" / "bench.png").is_file()
    bench = (site / "performance" / "index.html").read_text()
    assert "../benchmarks/idle-10/bench.png" in bench
    assert "../reproductions/xiong/" in (site / "reproducing" / "index.html").read_text()


def test_a_link_to_a_missing_heading_fails_the_build(tmp_path):
    """The strict build checks anchors too: a link to a heading that is not there fails."""
    docs = tmp_path / "docs"
    (docs / "manual").mkdir(parents=True)
    (docs / "manual" / "index.md").write_text("# x\n\n## Here\n\n[ok](#here) [bad](#nowhere)\n")
    text = CONFIG.read_text()
    head, rest = text.split("nav:", 1)
    rest = rest[rest.index("theme:"):]
    rest = rest[:rest.index("hooks:")] + rest[rest.index("validation:"):rest.index("plugins:")]
    (docs / "mkdocs.yml").write_text(head + "nav:\n  - Overview: index.md\n" + rest
                                     + "markdown_extensions:\n  - toc\n")
    done = _build(docs / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "nowhere" in done.stdout + done.stderr
    (docs / "manual" / "index.md").write_text("# x\n\n## Here\n\n[ok](#here)\n")
    assert _build(docs / "mkdocs.yml", tmp_path / "site2").returncode == 0


def test_no_sphinx_role_is_left_as_text(site):
    assert _literal_roles(site) == {}
    assert not any("<autoref" in page.read_text() for page in site.rglob("*.html"))


def test_roles_become_links_in_page_and_across_pages(site):
    link = '<a class="autorefs autorefs-internal"[^>]*href="{}"[^>]*><code>{}</code></a>'
    estimators = (site / "estimators" / "index.html").read_text()
    # ``:class:`PPKNNClassifier``` in the estimators package's docstring, short name
    # resolved in the module's scope; a link on the same page.
    assert re.search(link.format("#ppknn.protocols.ppknn_ring.plugin.estimator.PPKNNClassifier",
                                 "PPKNNClassifier"), estimators)
    # ``:class:`~core.errors.ConfigError``` (a source path, shown by its last name) links
    # to the errors page under its installed path.
    assert re.search(link.format("../errors/#ppknn.core.errors.ConfigError", "ConfigError"),
                     estimators)
    api = (site / "python-api" / "index.html").read_text()
    assert re.search(link.format("../scenarios/#ppknn.simulations.scenario.Scenario",
                                 "Scenario"), api)
    links = sum(len(re.findall(r'class="autorefs autorefs-internal"', page.read_text()))
                for page in site.rglob("*.html"))
    assert links >= 120, links  # 125 of the 152 rendered roles name a rendered object


def test_the_check_sees_literal_roles_without_the_roles_hook(tmp_path):
    """The same site without ``docs/roles.py``: the roles print as text and the check says so."""
    text = (CONFIG.read_text().replace("docs_dir: manual", f"docs_dir: {MANUAL}")
            .replace("- hooks.py", f"- {CONFIG.parent / 'hooks.py'}")
            .replace("- reports.py", f"- {CONFIG.parent / 'reports.py'}"))
    config = tmp_path / "mkdocs.yml"
    config.write_text("\n".join(line for line in text.splitlines() if "roles.py" not in line))
    done = _build(config, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    literal = _literal_roles(tmp_path / "site")
    assert sum(literal.values()) >= 100, literal
    assert literal["estimators/index.html"] >= 40


def _status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--",
                           "docs", "build", "site", ".gitignore"],
                          capture_output=True, text=True, cwd=ROOT, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="not a git checkout")
def test_a_default_build_leaves_git_status_clean():
    """``mkdocs build -f docs/mkdocs.yml`` writes to the git-ignored ``build/site``."""
    before = _status()
    done = _build(CONFIG, None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ROOT / "build" / "site" / "index.html").is_file()
    assert _status() == before
    for written in ("build/site/index.html", "docs/site/index.html", "site/index.html"):
        ignored = subprocess.run(["git", "check-ignore", "-q", written], cwd=ROOT)
        assert ignored.returncode == 0, f"{written} is not git-ignored"


def _roles_module():
    spec = importlib.util.spec_from_file_location("docs_roles", ROOT / "docs" / "roles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("body", "title", "target"), [
    ("ConfigError", "ConfigError", "ConfigError"),
    ("~core.errors.ConfigError", "ConfigError", "core.errors.ConfigError"),
    ("core.dp.Laplace", "core.dp.Laplace", "core.dp.Laplace"),
    ("Utility.cmp() <protocols.dptt.utility.Utility.cmp>", "Utility.cmp()",
     "protocols.dptt.utility.Utility.cmp"),
    ("run()", "run()", "run"),
])
def test_a_role_body_splits_into_title_and_target(body, title, target):
    assert _roles_module().split_role(body) == (title, target)


def test_a_broken_reference_fails_the_build(tmp_path):
    """The same strict settings on a one-module package: a missing object fails the build."""
    src = tmp_path / "src" / "tinypkg"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text('"""A tiny package."""\n\n\ndef f() -> int:\n'
                                     '    """Return one."""\n    return 1\n')
    docs = tmp_path / "docs"
    (docs / "manual").mkdir(parents=True)
    (docs / "manual" / "index.md").write_text("# x\n\n::: tinypkg.f\n\n::: tinypkg.no_such\n")
    text = "\n".join(line for line in CONFIG.read_text().splitlines()
                     if not line.startswith(("hooks", "  - hooks.py", "  - roles.py",
                                             "  - reports.py")))
    head, rest = text.split("nav:", 1)
    rest = rest[rest.index("theme:"):].replace("          options:\n",
                                               f"          paths: [{str(src.parent)!r}]\n"
                                               "          options:\n")
    (docs / "mkdocs.yml").write_text(head + "\nnav:\n  - Overview: index.md\n" + rest)
    done = _build(docs / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "tinypkg.no_such" in done.stdout + done.stderr
    (docs / "manual" / "index.md").write_text("# x\n\n::: tinypkg.f\n")  # and the fix passes
    assert _build(docs / "mkdocs.yml", tmp_path / "site2").returncode == 0
