"""Calibration checks of ``dp-nb``'s attacks (:mod:`simulations.leakage.calibrate_attacks`)."""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
    copy_rows,
    held_out_as_members,
)


def scenario(seed: int) -> dict[str, Any]:
    """Six analysts' models of the phoneme union at ε = 1, 200 held-out rows, in-process."""
    return {"run": {"name": "calibration-dp-nb", "seed": seed, "output": "unused"},
            "data": {"dataset": "phoneme", "test_fraction": 1 / 3, "max_queries": 200,
                     "bounds": {"lower": [-2.0] * 5, "upper": [5.0] * 5}},
            "parties": {"n": 1, "analysts": 6},
            "protocol": {"name": "dp-nb", "method": "smooth", "epsilon": 1.0},
            "runtime": {"kind": "inprocess", "channels": False}}


WEAK_MI = ("the Naive Bayes model is two moments per class and feature of ~3,600 rows: one "
           "record moves it by about 1/3,600 of a range, far below what 100 members and 100 "
           "held-out rows can resolve, so even the exact model shows no membership signal "
           "(nor was a non-private model of 100 rows with 100 features, 0 of 10 seeds; the "
           "worst-case audit, `ppknn audit`, is the check with power)")

CHECKS = (
    Check("model-membership-inference", CONTROL,
          "both samples held-out rows (the model saw neither): a random half named members",
          alter=held_out_as_members),
    Check("model-membership-inference", PLANTED,
          "the non-private model (exact statistics, no noise)",
          variant=Variant("non-private", {"protocol": {"method": "non-private"}}),
          limit=WEAK_MI),
    Check("owner-sees-requests", CONTROL,
          "the honest run: requests name public parameters (the six analysts' rows pooled)",
          pool=True),
    Check("owner-sees-requests", PLANTED,
          "five of the instances copied into every request (the six analysts' rows pooled)",
          alter=copy_rows("others_X", "nb-owner"), pool=True),
)
"""The checks (one control and one planted leak per default attack)."""
