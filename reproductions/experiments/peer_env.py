"""A peer library's own virtual environment, found or made once with ``venv`` and pip.

Peer libraries (diffprivlib, MPyC, Flower) are compared against ppknn but never enter
its dependencies: each lives in a virtual environment of its own under
``~/.cache/ppknn/`` and is driven there through a subprocess. :func:`ensure` finds
the environment when every module imports in it, and makes it when asked.

>>> python_of(Path("/tmp/env")).parts[-2:]
('bin', 'python')
>>> versions(Path("/nonexistent/python"), ("numpy",)) is None
True
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

CACHE = Path.home() / ".cache" / "ppknn"
"""Where the peers' environments are made unless told otherwise."""


def python_of(venv: Path) -> Path:
    """The interpreter of the virtual environment ``venv``."""
    return venv / ("Scripts" if sys.platform == "win32" else "bin") / "python"


def versions(python: Path, modules: Sequence[str]) -> dict[str, str] | None:
    """Each module's installed version when all of them import in ``python``, else ``None``."""
    if not python.exists():
        return None
    probe = ("import importlib, importlib.metadata as m, json, sys; mods = sys.argv[1:]; "
             "[importlib.import_module(x) for x in mods]; "
             "print('VERSIONS', json.dumps({x: m.version(x) for x in mods}))")
    try:
        done = subprocess.run([str(python), "-c", probe, *modules], capture_output=True,
                              text=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    found = [line for line in done.stdout.splitlines() if line.startswith("VERSIONS ")]
    return json.loads(found[-1].removeprefix("VERSIONS ")) if found else None  # imports may print


def ensure(venv: Path, requirements: Sequence[str], modules: Sequence[str], *, create: bool,
           what: str, how: str) -> tuple[Path | None, dict[str, str] | None, str]:
    """``(python, versions, message)`` of the environment of ``what`` in ``venv``.

    Found when every one of ``modules`` imports there; otherwise made (``create``: a
    ``venv`` and ``pip install`` of ``requirements``) or refused with ``how`` (the
    command that makes it) in the message.
    """
    python = python_of(venv)
    found = versions(python, modules)
    if found:
        return python, found, f"{_listed(found)} in {venv}"
    if not create:
        return None, None, f"{what} is not installed in {venv}; run `{how}` to create it"
    try:
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                       capture_output=True, timeout=600)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True,
                       capture_output=True, timeout=1800)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        return None, None, (f"could not create the environment of {what} in {venv}: {exc} "
                            f"{detail.decode(errors='replace')[-500:]}")
    found = versions(python, modules)
    if not found:
        return None, None, f"{what} was installed in {venv} but does not import"
    return python, found, f"{_listed(found)} in {venv} (created)"


def _listed(found: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in found.items())


__all__ = ["CACHE", "ensure", "python_of", "versions"]
