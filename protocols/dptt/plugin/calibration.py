"""Calibration checks of ``dptt``'s attacks (:mod:`simulations.leakage.calibrate_attacks`)."""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
    permute,
)


def scenario(seed: int) -> dict[str, Any]:
    """150 queries on 2,850 synthetic points, E8 at ε = 4 per query, GEO beside it."""
    return {"run": {"name": "calibration-dptt", "seed": seed, "output": "unused"},
            "data": {"dataset": "synthetic:classification?rows=3000&features=2&classes=2",
                     "test_fraction": 0.05, "scale": "minmax",
                     "bounds": {"lower": [0.0, 0.0], "upper": [1.0, 1.0]}},
            "parties": {"n": 1},
            "protocol": {"name": "dptt", "variant": "E8", "utility": "cmp",
                         "final_epsilon": 4.0, "client_budget": 4.0, "geo_radius": 0.1},
            "runtime": {"kind": "inprocess", "channels": False}}


NO_NOISE = Variant("ε = 10^4", {"protocol": {"final_epsilon": 1e4, "client_budget": 1e4,
                                             "geo_epsilon": 1e4}})
PERMUTED = "the queries permuted across the client's slots (each scored against another's)"

CHECKS = (
    Check("server-side-inference", CONTROL, PERMUTED, alter=permute("queries")),
    Check("server-side-inference", PLANTED,
          "ε = 10^4 per query: the exponential mechanism picks the true side", variant=NO_NOISE),
    Check("server-location-inference", CONTROL, PERMUTED, alter=permute("queries")),
    Check("server-location-inference", PLANTED,
          "ε = 10^4 per query: the released points are the query's own leaf",
          variant=NO_NOISE),
    Check("geo-server-location-inference", CONTROL, PERMUTED, alter=permute("queries")),
    Check("geo-server-location-inference", PLANTED,
          "GEO at ε* = 10^4: the noisy copies sit on the query", variant=NO_NOISE),
    Check("client-sees-training-points", CONTROL,
          "the view of a party sent no node or release (the server's own)",
          observers=("server",)),
    Check("client-sees-training-points", PLANTED,
          "the honest run: the client receives node values and points by design"),
)
"""The checks (one control and one planted leak per default attack)."""
