"""The two-party protocol end to end: runtime, transcript, views, Ray equivalence."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.pca_perturbation.attacks import attack
from ppknn.protocols.pca_perturbation.driver import run_releases
from ppknn.protocols.pca_perturbation.parties.miner import Miner
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.protocol import MiningPlan
from ppknn.protocols.pca_perturbation.sanitize import normalise
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
from ppknn_reproductions.experiments.pca_evaluation import Job, Split, miner_view, run_session
from tests.pca.conftest import unit_bounds


@pytest.fixture(scope="module")
def iris_split(paper_sets):
    ds = paper_sets["iris"]
    perm = np.random.default_rng(0).permutation(len(ds.y))
    te, tr = perm[:30], perm[30:]
    return Split(X_train=ds.X[tr], y_train=ds.y[tr], X_test=ds.X[te], y_test=ds.y[te],
                 n_classes=3, bounds=unit_bounds(ds.X))


def specs(split, seed=3, run_id="t"):
    return [
        PartySpec("sanitizer", Sanitizer, {"party_id": "sanitizer", "index": 0,
                                           "X": split.X_train, "y": split.y_train,
                                           "n_classes": 3, "run_id": run_id,
                                           "bounds": split.bounds, "seed": seed}),
        PartySpec("miner", Miner, {"party_id": "miner", "index": 1, "X": split.X_test,
                                   "n_classes": 3, "run_id": run_id, "seed": seed}),
    ]


JOBS = [(ReleaseRequest(scheme="pca-no-noise", s=4, round=1),
         MiningPlan(methods=("fixed-k", "best-k"), max_validation=50)),
        (ReleaseRequest(scheme="pca-laplace", b=0.2, s=2, round=2),
         MiningPlan(methods=("radius", "fixed-k"))),
        (ReleaseRequest(scheme="rand-p", k=3, round=3), None)]


def run_jobs(kind, split, tmp):
    rt = make_runtime(kind)
    try:
        rt.start(specs(split), RunContext(run_id="t", transcript_dir=tmp))
        outs = run_releases(rt, JOBS)
        rt.close_transcript()
        truth = rt.state("sanitizer", "Z")
    finally:
        rt.shutdown()
    return outs, Transcript(tmp), truth


def test_full_release_without_noise_classifies_like_scikit_learn(iris_split, tmp_path):
    outs, _, _ = run_jobs("inprocess", iris_split, tmp_path)
    Z = normalise(iris_split.X_train, iris_split.bounds.lower, iris_split.bounds.upper)
    Zq = normalise(iris_split.X_test, iris_split.bounds.lower, iris_split.bounds.upper)
    ref = KNeighborsClassifier(n_neighbors=5, algorithm="brute",
                               weights=lambda d: 1.0 / d**2).fit(Z, iris_split.y_train)
    # PCA with s = m is a rotation: distances and so predictions are unchanged
    np.testing.assert_array_equal(outs[0].predictions["fixed-k"], ref.predict(Zq))
    assert outs[0].best_k > 0 and outs[2] is None
    assert set(outs[1].predictions) == {"radius", "fixed-k"}
    assert 0.0 <= outs[1].fallback_fraction <= 1.0 and outs[1].mean_in_radius > 0


def test_transcript_holds_exactly_what_the_miner_received(iris_split, tmp_path):
    _, transcript, truth = run_jobs("inprocess", iris_split, tmp_path)
    msgs = transcript.messages(with_provenance=True)
    assert [(m.sender, m.receiver, m.round, m.kind) for m in msgs] == [
        ("sanitizer", "miner", 1, "release:pca-no-noise"),
        ("sanitizer", "miner", 2, "release:pca-laplace"),
        ("sanitizer", "miner", 3, "release:rand-p")]
    local = Sanitizer(party_id="sanitizer", index=0, X=iris_split.X_train, y=iris_split.y_train,
                      n_classes=3, run_id="t", bounds=iris_split.bounds, seed=3)
    expected = local.release(JOBS[1][0])
    seen = miner_view(transcript, "miner", 2)
    assert len(seen.received) == 1 and seen.received[0].provenance == {}
    for key, value in expected.payload.items():
        np.testing.assert_array_equal(seen.received[0].payload[key], value)
    assert miner_view(transcript, "sanitizer", 2).received == ()
    outcome = attack(seen.received[0], truth)
    assert outcome.no_filter > 0 and outcome.best_s2 == 1


def test_run_session_scores_accuracy_privacy_and_distortion(iris_split):
    jobs = [Job(request=r, plan=p, attack=True) for r, p in JOBS[1:2]]
    [res] = run_session(iris_split, jobs, make_runtime=lambda: make_runtime("inprocess"),
                        seed=3, run_id="s")
    assert set(res.accuracy) == {"radius", "fixed-k"}
    assert res.accuracy["fixed-k"] == pytest.approx(
        np.mean(res.output.predictions["fixed-k"] == iris_split.y_test))
    np.testing.assert_allclose(res.amplification, np.exp(1 / 0.2), rtol=1e-13)
    assert res.stats is not None and res.measured is not None and res.attack is not None
    assert res.noise_to_signal[0] <= res.noise_to_signal[1]


@pytest.mark.ray
def test_ray_and_inprocess_give_identical_transcripts(ray_local, iris_split, tmp_path):
    outs_local, t_local, _ = run_jobs("inprocess", iris_split, tmp_path / "local")
    outs_ray, t_ray, _ = run_jobs("ray", iris_split, tmp_path / "ray")
    assert t_local.canonical_rows() == t_ray.canonical_rows()
    for a, b in zip(outs_local, outs_ray):
        if a is None:
            assert b is None
            continue
        for method in a.predictions:
            np.testing.assert_array_equal(a.predictions[method], b.predictions[method])
