"""Calibration checks of ``pca-perturbation``'s attacks.

See :mod:`simulations.leakage.calibrate_attacks`.
"""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
    copy_rows,
)


def scenario(seed: int) -> dict[str, Any]:
    """The wine release (PCA, 3 components, Laplace b = 0.2) to a miner of 59 rows."""
    return {"run": {"name": "calibration-pca", "seed": seed, "output": "unused"},
            "data": {"dataset": "sklearn:wine", "test_fraction": 1 / 3, "scale": "minmax",
                     "bounds": {"lower": [11.0, 0.5, 1.0, 10.0, 70.0, 0.9, 0.3, 0.1, 0.4, 1.0,
                                          0.4, 1.2, 250.0],
                                "upper": [15.0, 6.0, 3.5, 30.0, 170.0, 4.0, 5.5, 0.7, 3.6,
                                          13.0, 1.8, 4.0, 1700.0]}},
            "parties": {"n": 1},
            "protocol": {"name": "pca-perturbation", "scheme": "pca-laplace", "components": 3,
                         "b": 0.2, "method": "fixed-k", "k": 5, "attacks": False},
            "runtime": {"kind": "inprocess", "channels": False}}


SILENT = Variant("b = 20", {"protocol": {"b": 20.0}})
NO_NOISE = Variant("pca-no-noise", {"protocol": {"scheme": "pca-no-noise"}})
SILENT_WHAT = "Laplace noise 20 times each column's range: the release says nothing"

CHECKS = (
    Check("transform-attack", CONTROL, SILENT_WHAT, variant=SILENT),
    Check("transform-attack", PLANTED, "the release without noise (pca-no-noise)",
          variant=NO_NOISE),
    Check("correlation-attack", CONTROL, SILENT_WHAT, variant=SILENT),
    Check("correlation-attack", PLANTED, "the release without noise (pca-no-noise)",
          variant=NO_NOISE),
    Check("sanitizer-sees-instances", CONTROL, "the honest run: the release is one-way"),
    Check("sanitizer-sees-instances", PLANTED,
          "ten of the miner's instances copied into what the sanitizer receives",
          alter=copy_rows("instances", "sanitizer", rows=10, sender="miner")),
)
"""The checks (one control and one planted leak per default attack)."""
