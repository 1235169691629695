"""Golden runs of every driver's paths that tests/test_perf_golden.py does not cover.

Recorded before the drivers called their parties through typed interfaces
(:mod:`core.runtime.typed`): the typed handles are the same runtime calls
underneath, so the transcript and the predictions of each run are the same
bit for bit. A change that is meant to alter a run re-records its digest here.
"""

from __future__ import annotations

import pytest

from tests.test_perf_golden import _load, run_digest

CASES = {
    "dptt": _load("dptt", data={"max_queries": 60}),
    "pca-perturbation": _load("pca-perturbation", data={"max_queries": 60}),
    # smooth sensitivity with ppknn's budget split and variance floor (the example file
    # states paper = true; this path, recorded when the defaults changed, stays pinned)
    "dp-nb": _load("dp-nb", data={"max_queries": 60}, protocol={"paper": False}),
    "ring-nb": _load("ring-nb", data={"max_queries": 60}),
    "ring-nb-shared": _load("ring-nb", data={"max_queries": 60},
                            protocol={"secure_sum": "shared"}),
    "ppknn-last": _load("ppknn-ring", data={"max_queries": 60},
                        protocol={"start_step": "last", "rounds": 3}),
    "ppknn-last-shared": _load("ppknn-ring", data={"max_queries": 60}, parties={"n": 5},
                               protocol={"start_step": "last", "rounds": 2,
                                         "secure_sum": "shared"}),
}

GOLDEN = {
    "dptt": "687678cacf76db036af4e078ea53c238ac8755640e7a71aaa281ba52a1a6f34c",
    "pca-perturbation": "2b1af7cd95acacc21d920380399360b2166a941cae3eaf76f36cf789833ee727",
    "dp-nb": "c988cd6b1ef910b68813d990fb50f4a83cad6dd0db839e07e266a218181a6d80",
    "ring-nb": "f724f2d9d1abed626defbd4e921395ffbc31b7a6aaf450cfbdc4c5097b2a8c82",
    "ring-nb-shared": "69267586309044c579c713ef5b9839e9a7f01415e54b9c40f61bc9353391c9f7",
    "ppknn-last": "1742202f2316458d4496584517b02e73a81427c8f02efdafc47bd0c4a3a8118c",
    "ppknn-last-shared": "f02d79ad6352f4e936be3bf20f0b309d569f20228c07f08d74fef3143a6cc2d2",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_driver_run_is_bit_identical_to_the_recorded_one(name, tmp_path):
    assert run_digest(CASES[name], tmp_path) == GOLDEN[name]
