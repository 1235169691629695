"""mkdocs hook: the committed reports and figures become part of the site.

The manual (``docs/manual/``) links to the generated reports under ``docs/`` --
``reproductions/`` (one Markdown report per paper and its figures),
``comparison/`` (the comparison of the protocols) and ``benchmarks/`` (the kept
benchmark runs and notes). They stay where their generators write them; this hook
adds their Markdown pages and images to the build under the same relative paths,
so a manual page's link to a report is checked and the strict build fails on a broken
one. The manual links to them as a reader of the checkout does, ``../reproductions/xiong.md``
from ``docs/manual/``; in the site that is ``reproductions/xiong.md``, and this hook
rewrites it so. Nothing in the checkout is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
REPORTS = ("reproductions", "comparison", "benchmarks", "calibration")
SUFFIXES = {".md", ".png", ".svg"}


def report_paths() -> list[str]:
    """The report files under ``docs/``, as paths relative to it (sorted)."""
    return sorted(str(p.relative_to(DOCS)) for folder in REPORTS
                  for p in (DOCS / folder).rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """A manual page's ``](../reproductions/...)`` is ``](reproductions/...)`` in the site."""
    if page.file.src_uri.split("/", 1)[0] in REPORTS:
        return markdown
    for folder in REPORTS:
        markdown = markdown.replace(f"](../{folder}/", f"]({folder}/")
    return markdown


def on_files(files: Files, config: Any) -> Files:
    """Add every report page and figure beside the manual's own files."""
    for path in report_paths():
        if files.get_file_from_path(path) is None:
            files.append(File(path, str(DOCS), config["site_dir"],
                              config["use_directory_urls"]))
    return files
