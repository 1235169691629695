"""Paper reproductions: ``ppknn reproduce NAME``.

Each paper has a module ``simulations.reproduce.<name>`` that defines

``run(output: Path, *, quick: bool, runtime: str, report: Path) -> Path``
    Re-run the paper's experiments, write one CSV table and one PNG plot per
    figure into ``output``, write the Markdown report
    ``report`` (normally ``docs/reproductions/<name>.md``; figures and claims beside measured
    numbers, every number generated), and return the report's path.
    ``quick`` shrinks repetitions and sizes so the whole run takes under two
    minutes (exercised by the tests); ``runtime`` is ``"inprocess"`` or ``"ray"``.

The registry maps names to modules and one-line descriptions.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from ppknn.core.errors import ConfigError

REPRODUCTIONS: dict[str, str] = {
    "gursoy": "Gursoy, Inan, Nergiz & Saygin: DP r-N and k-NN classification (Figs. 7-14, audit)",
    "xiong": "Xiong, Chitti & Liu: PP-kNN over a ring (Figs. 2-6, bound, collusion, cost)",
    "zafarani": "Zafarani & Clifton: DP Naive Bayes with smooth sensitivity (Figs. 4-7, 13, audit)",
    "mukherjee": "Mukherjee et al.: PCA + Laplace release, modified kNN, attacks (Figs. 5-11)",
    "lepert": "Lepert: DP-TT private kd-tree traversal vs geo-indistinguishability (Ch. 6)",
}


def load(name: str) -> ModuleType:
    """The module of reproduction ``name``."""
    if name not in REPRODUCTIONS:
        raise ConfigError(f"unknown reproduction {name!r}; available: {sorted(REPRODUCTIONS)}")
    return importlib.import_module(f"ppknn.simulations.reproduce.{name}")


def report_path(name: str, root: Path | None = None) -> Path:
    """Where the Markdown report of ``name`` goes (``docs/reproductions/<name>.md``)."""
    base = root if root is not None else Path.cwd()
    return base / "docs" / "reproductions" / f"{name}.md"


__all__ = ["REPRODUCTIONS", "load", "report_path"]
