"""ppknn: multi-party simulation of privacy-preserving nearest-neighbour classification.

The few names a notebook needs:

- :func:`ppknn.run` -- run a scenario (TOML path, dict or ``Scenario``) and get a
  :class:`ppknn.Result` (pyarrow tables, summary, leakage); nothing is written
  unless ``output=`` is given.
- :func:`ppknn.sweep` -- a grid of scenarios x seeds, one table row per run.
- :func:`ppknn.leakage` -- each protocol's leakage report, from a run or a results folder;
  :func:`ppknn.leakage_table` -- every protocol's leakage rows (``leakage.csv``).
- errors: :class:`ppknn.PpknnError` (every error the framework raises on purpose):
  :class:`ppknn.ConfigError` and :class:`ppknn.DataError` (bad input, ``ValueError``),
  :class:`ppknn.PartyFailure` and :class:`ppknn.IntegrityError` (a run that failed),
  :class:`ppknn.BudgetExhausted`; :class:`ppknn.PrivacyLeakWarning`.
- :func:`ppknn.load_scenario` -- validate a scenario (precise ``ConfigError`` messages).
- :data:`ppknn.registry` -- the protocol registry (``registry.names()``,
  ``registry.get(name).roles``); :func:`ppknn.protocol_names` lists the names.
- :mod:`ppknn.testing` -- the protocol contract kit: the checks every registered protocol
  passes, for a protocol's own tests (imported on its own: ``from ppknn.testing import ...``).
- scikit-learn estimators: :class:`ppknn.PPKNNClassifier`,
  :class:`ppknn.DPRadiusNeighborsClassifier`, :class:`ppknn.DPKNeighborsClassifier`,
  :class:`ppknn.PCALaplaceSanitizer`, :class:`ppknn.DPTTClassifier`,
  :class:`ppknn.DPNaiveBayes`.

The project's layers are installed under this one namespace so that they cannot clash
with other packages named ``core`` or ``simulations``: ``ppknn.core`` (messages, channels,
transcript, runtimes, DP core), ``ppknn.protocols`` (one package per protocol; a
subpackage, which is why the registry is ``ppknn.registry`` and not a
``ppknn.protocols()`` function), ``ppknn.parties`` and ``ppknn.simulations``.

``import ppknn`` is light: the names above are loaded on first use (``ppknn.core``
modules import this package first, so it must not import the upper layers itself).

>>> import ppknn
>>> "dp-knn" in ppknn.protocol_names(), ppknn.registry.get("ppknn-ring").roles[0].name
(True, 'owner')
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path as _Path
from typing import TYPE_CHECKING, Any

# The checkout and the installed package agree. Installed, this folder holds the layers
# (ppknn/core, ppknn/parties, ...). In the checkout the layers sit beside this folder
# (core/, parties/, ... at the top), and anything that puts the checkout's root first on
# sys.path -- a Ray worker started from there, `python -m ppknn`, a job submitted with
# `ray job submit --working-dir .` -- imports this folder as `ppknn`: the root then joins
# the package's search path, so `ppknn.core` is the checkout's core/.
_HERE = _Path(__file__).resolve().parent
if not (_HERE / "core").is_dir() and all(
        (_HERE.parent / layer / "__init__.py").is_file()
        for layer in ("core", "parties", "protocols", "simulations")):
    __path__.append(str(_HERE.parent))  # noqa: F821 - set by the import system

try:
    __version__ = version("ppknn")
except PackageNotFoundError:  # pragma: no cover - running from a checkout without install
    __version__ = "0+unknown"

_LAZY = {
    "run": "ppknn.api",
    "sweep": "ppknn.api",
    "leakage": "ppknn.api",
    "leakage_table": "ppknn.api",
    "load_scenario": "ppknn.api",
    "protocol_names": "ppknn.api",
    "Result": "ppknn.api",
    "Scenario": "ppknn.simulations.scenario",
    "PPKNNClassifier": "ppknn.estimators",
    "DPRadiusNeighborsClassifier": "ppknn.estimators",
    "DPKNeighborsClassifier": "ppknn.estimators",
    "PCALaplaceSanitizer": "ppknn.estimators",
    "DPTTClassifier": "ppknn.estimators",
    "DPNaiveBayes": "ppknn.estimators",
    "BelowMajorityWarning": "ppknn.estimators",
    "ConfigError": "ppknn.core.errors",
    "DataError": "ppknn.core.errors",
    "PpknnError": "ppknn.core.errors",
    "PartyFailure": "ppknn.core.errors",
    "IntegrityError": "ppknn.core.errors",
    "BudgetExhausted": "ppknn.core.errors",
    "PrivacyLeakWarning": "ppknn.core.errors",
}
_MODULES = {"registry": "ppknn.simulations.registry"}

if TYPE_CHECKING:  # pragma: no cover
    from ppknn.api import (
        Result,
        leakage,
        leakage_table,
        load_scenario,
        protocol_names,
        run,
        sweep,
    )
    from ppknn.core.errors import (
        BudgetExhausted,
        ConfigError,
        DataError,
        IntegrityError,
        PartyFailure,
        PpknnError,
        PrivacyLeakWarning,
    )
    from ppknn.estimators import (
        BelowMajorityWarning,
        DPKNeighborsClassifier,
        DPNaiveBayes,
        DPRadiusNeighborsClassifier,
        DPTTClassifier,
        PCALaplaceSanitizer,
        PPKNNClassifier,
    )
    from ppknn.simulations import registry
    from ppknn.simulations.scenario import Scenario


def __getattr__(name: str) -> Any:
    """Load the public names on first use (keeps ``import ppknn`` light)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    else:
        raise AttributeError(f"module 'ppknn' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_MODULES})


__all__ = ["BelowMajorityWarning", "BudgetExhausted", "ConfigError", "DPKNeighborsClassifier",
           "DPNaiveBayes", "DPRadiusNeighborsClassifier", "DPTTClassifier", "DataError",
           "IntegrityError", "PCALaplaceSanitizer", "PPKNNClassifier", "PartyFailure",
           "PpknnError", "PrivacyLeakWarning", "Result", "Scenario", "__version__", "leakage",
           "leakage_table", "load_scenario", "protocol_names", "registry", "run", "sweep"]
