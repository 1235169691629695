"""Calibration checks of ``ppknn-ring``'s attacks (:mod:`simulations.leakage.calibrate_attacks`)."""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
)


def scenario(seed: int) -> dict[str, Any]:
    """Eight pima owners, k = 5, p0 = 1, d = 0.5, two rounds, 40 queries, in-process."""
    return {"run": {"name": "calibration-ring", "seed": seed, "output": "unused"},
            "data": {"dataset": "pima", "test_fraction": 0.3333, "max_queries": 40,
                     "scale": "minmax",
                     "bounds": {"lower": [0, 0, 0, 0, 0, 0, 0.078, 21],
                                "upper": [17, 199, 122, 99, 846, 67.1, 2.42, 81]}},
            "parties": {"n": 8},
            "protocol": {"name": "ppknn-ring", "k": 5, "p0": 1.0, "d": 0.5, "rounds": 2},
            "runtime": {"kind": "inprocess", "channels": False}}


ALWAYS = Variant("p0 = 1, d = 1", {"protocol": {"p0": 1.0, "d": 1.0}})
LONE = Variant("owner-01 never randomises, the others always do",
               {"protocol": {"p0": 1.0, "d": 1.0}},
               ({"party": "owner-01", "kind": "never-randomise"},))
SHARED = Variant("shared sum", {"protocol": {"secure_sum": "shared"}})
ALWAYS_WHAT = ("every node randomises in every round (p0 = 1, d = 1): what a node passes on "
               "is its random fill, never its values")
LONE_WHAT = ("the target (owner-01) never randomises and every other node always does: the "
             "only real values that enter the vector are the target's")
SAME_CLAIMS = ("the §6.6 attack claims every value that is new against the vector the "
               "successor sent itself; in round 1 that is every value of the row (the "
               "reference is the public initial vector), so a random claimer of as many values "
               "claims the same ones and its baseline all but equals the attack's rate (median "
               "advantage 0, no planted seed flagged): the paper's disclosure is reported, its "
               "advantage over a random claimer says nothing; the informed successor, which "
               "keeps fewer claims, is the one with power")
INFORMED = ("the informed successor's claims are the target's values and those random fills "
            "of the other nodes that survive into the final vector; over a random claimer "
            "its advantage is small (a median of about 0.07) and near 0 on some seeds (how "
            "many fills survive varies), so its power at this leak stays below 0.95")

CHECKS = (
    Check("successor-attribution", CONTROL, ALWAYS_WHAT, variant=ALWAYS, target="owner-01"),
    Check("successor-attribution", PLANTED, LONE_WHAT, variant=LONE, target="owner-01",
          limit=SAME_CLAIMS),
    Check("informed-successor", CONTROL, ALWAYS_WHAT, variant=ALWAYS, target="owner-01"),
    Check("informed-successor", PLANTED, LONE_WHAT, variant=LONE, target="owner-01",
          limit=INFORMED),
    Check("secure-sum-neighbours", CONTROL,
          "the secret-shared sum: no mask the two neighbours can subtract", variant=SHARED),
    Check("secure-sum-neighbours", PLANTED,
          "the ring sum: its two neighbours hold what the target added"),
)
"""The checks (one control and one planted leak per default attack)."""
