"""Building variants of the project's optional C extensions in tests (mutation checks).

A test writes a changed copy of an extension's source and builds it here, with the
compile flags ``pyproject.toml`` declares for that extension, then swaps the module in
where the Python code looks for the built one.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compiler() -> str | None:
    """The C compiler an install would use (``CC``, else ``cc``), or None."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("cc")


def _flags(extension: str) -> list[str]:
    """``extra-compile-args`` of the extension ``extension`` in ``pyproject.toml``."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    modules = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "ext-modules"]
    (module,) = [m for m in modules if m["name"].rsplit(".", 1)[-1] == extension]
    return list(module.get("extra-compile-args", []))


def build_variant(tmp_path: Path, text: str, name: str, extension: str):
    """``text`` (a variant of ``extension``'s C source) built in ``tmp_path`` and loaded."""
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    out = tmp_path / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([compiler(), "-shared", "-fPIC", *_flags(extension),
                    f"-I{sysconfig.get_paths()['include']}", str(src), "-o", str(out)],
                   check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location(extension, out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
