"""Fault injection on Ray: the same properties as in-process, both layouts, one shared Ray.

See ``test_faults.py`` for what each case checks. Ray adds process deaths
(``kill`` ends the host's worker process), hangs that only a timeout can
end (the stuck host is killed so the transcript closes in bounded time),
and the hosted layout, where a failing party shares its process with others.
A node lost mid-run is in ``test_multinode.py``.
"""

from __future__ import annotations

import pytest

from tests.test_faults import VICTIMS, check_outcome, fault_for, scenario

pytestmark = pytest.mark.ray

RAY_KINDS = ["kill", "raise", "hang", "memory", "drop", "duplicate", "tamper"]
# actor-per-party where the parties are few (the ring's is in the quick test above), hosted
# (one host actor: the cheapest start on a small machine) where they are many
LAYOUTS = {"ppknn-ring": "hosted", "dptt": "actor-per-party",
           "dp-knn": "actor-per-party", "ring-nb": "hosted", "pca-perturbation": "actor-per-party",
           "dp-nb": "hosted"}
TIMEOUT_S = 2.0


def _ray_scenario(protocol: str, layout: str):
    runtime = {"kind": "ray", "layout": layout}
    if layout == "hosted":
        runtime["hosts"] = 1
    sc = scenario(protocol, party_timeout_s=TIMEOUT_S, **runtime)
    if protocol in ("dp-knn", "dp-nb"):  # fewer analysts: fewer actors to start
        sc = sc.set_key("parties.analysts", 2)
    if protocol == "ppknn-ring":  # fewer owners (the victim, owner-02, is still one)
        sc = sc.set_key("parties.n", 4)
    return sc


def _run_cases(protocol: str, layout: str, kinds: list[str], tmp_path) -> list[tuple]:
    from ppknn.simulations.faults import run_with_fault

    sc = _ray_scenario(protocol, layout)
    measured = []
    for kind in kinds:
        folder = tmp_path / f"{layout}-{kind}" / "transcript"
        outcome = run_with_fault(sc, fault_for(protocol, kind, TIMEOUT_S), folder)
        measured.append((kind, outcome.error, round(outcome.seconds, 2)))
        check_outcome(outcome, folder)
    return measured


@pytest.mark.parametrize("layout, kinds", [("actor-per-party", ["raise", "hang"]),
                                           ("hosted", ["kill", "drop"])])
def test_ring_faults_on_both_layouts(ray_local, tmp_path, layout, kinds):
    measured = _run_cases("ppknn-ring", layout, kinds, tmp_path)
    assert [m[0] for m in measured] == kinds


MATRIX = [(protocol, kind) for protocol in sorted(VICTIMS) for kind in RAY_KINDS]


@pytest.mark.slow
@pytest.mark.parametrize("protocol, kind", MATRIX, ids=[f"{p}-{k}" for p, k in MATRIX])
def test_fault_matrix_on_ray(ray_local, tmp_path, protocol, kind):
    """Seven fault kinds x six protocols, the layout alternating by protocol (one run each)."""
    _run_cases(protocol, LAYOUTS[protocol], [kind], tmp_path)
