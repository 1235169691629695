"""mkdocs hook: let the API reference read the layers as they are installed.

The layers live in the top-level folders ``core/``, ``parties/``, ``protocols/`` and
``simulations/`` but are installed as ``ppknn.core``, ``ppknn.parties``, ... (a
``package-dir`` mapping). mkdocstrings reads source files by import path, so this hook
lays out a temporary ``ppknn/`` tree of symbolic links in that installed shape and points
the Python handler at it; nothing in the checkout is written.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("core", "parties", "protocols", "simulations")


def source_tree() -> Path:
    """A temporary folder holding ``ppknn/`` in its installed shape (symbolic links)."""
    tmp = Path(tempfile.mkdtemp(prefix="ppknn-docs-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    pkg = tmp / "ppknn"
    pkg.mkdir()
    for item in (ROOT / "ppknn").iterdir():
        if item.suffix == ".py":
            (pkg / item.name).symlink_to(item)
    for layer in LAYERS:
        (pkg / layer).symlink_to(ROOT / layer, target_is_directory=True)
    return tmp


@event_priority(100)  # before mkdocstrings reads its handler options
def on_config(config: Any) -> Any:
    """Point the Python handler at the installed-shape tree."""
    handlers = config.plugins["mkdocstrings"].config.handlers
    handlers.setdefault("python", {})["paths"] = [str(source_tree())]
    return config
