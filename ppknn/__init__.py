"""ppknn: multi-party simulation of privacy-preserving nearest-neighbour classification.

The project's layers are installed under this one namespace so that they cannot clash with
other packages: ``ppknn.core`` (messages, channels, transcript, runtimes, DP core),
``ppknn.protocols`` (one package per protocol), ``ppknn.parties`` (who holds what) and
``ppknn.simulations`` (scenarios, registry, runner, results, reporting, CLI).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ppknn")
except PackageNotFoundError:  # pragma: no cover - running from a checkout without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
