"""The empirical auditor: below the claim for correct mechanisms, above it for a broken one."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.dp.audit import AuditResult, audit, clopper_pearson
from ppknn.core.dp.exact import SeededEntropy
from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace
from ppknn.core.dp.planar import PlanarLaplace
from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
from ppknn.core.dp.smooth import Cauchy

EPS = 1.0
N = 100_000


def batched(mech):
    """A mechanism as ``(x, rng, n) -> n outputs`` for a scalar true value x."""
    return lambda x, rng, n: mech.randomise(np.full(n, x), rng).value


def selection(mech):
    """Selection mechanisms: x is one utility vector; n queries in one batched call."""
    return lambda u, rng, n: mech.randomise(np.tile(u, (n, 1)), rng).value


# Worst case for the exponential mechanism: candidate 0 gains Δ while the 49 others lose Δ,
# so the normaliser moves against the chosen candidate and the ratio approaches e^ε.
EM_A = np.array([1.0] + [0.0] * 49)
EM_B = np.array([0.0] + [1.0] * 49)


def run(mechanism, a, b, n=N, seed=1, **kw) -> AuditResult:
    return audit(
        mechanism, a, b, n_samples=n, rng=np.random.default_rng(seed), vectorized=True, **kw
    )


CORRECT = {
    "laplace": lambda: run(batched(Laplace(epsilon=EPS)), 0.0, 1.0),
    "geometric": lambda: run(batched(Geometric(epsilon=EPS)), 0, 1),
    "gaussian": lambda: run(batched(Gaussian(epsilon=EPS, delta=1e-5)), 0.0, 1.0, delta=1e-5),
    "exponential": lambda: run(selection(ExponentialMechanism(epsilon=EPS)), EM_A, EM_B),
    "report-noisy-max": lambda: run(selection(ReportNoisyMax(epsilon=EPS)), [1.0, 0.0], [0.0, 1.0]),
    "cauchy": lambda: run(
        lambda x, rng, n: Cauchy(epsilon=EPS).randomise(np.full(n, x), 1.0, rng).value, 0.0, 1.0
    ),
    "planar-laplace": lambda: run(
        lambda p, rng, n: PlanarLaplace(epsilon=EPS).randomise(np.tile(p, (n, 1)), rng).value[:, 0],
        [0.0, 0.0],
        [1.0, 0.0],
    ),
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_mechanism_stays_below_its_claim(name):
    result = CORRECT[name]()
    assert 0.0 <= result.eps_lower < EPS, result


def test_correct_laplace_bound_is_close_to_the_truth():
    assert CORRECT["laplace"]().eps_lower > 0.85  # Laplace's ε is attained by tail events


def test_broken_laplace_with_half_the_scale_exceeds_its_claim():
    class HalfScaleLaplace(Laplace):  # claims ε but adds noise of scale sensitivity/(2ε)
        def randomise(self, value, rng=None):
            return Laplace(epsilon=2 * self.epsilon).randomise(value, rng)

    result = run(batched(HalfScaleLaplace(epsilon=EPS)), 0.0, 1.0)
    assert result.eps_lower > EPS, result


def test_broken_exponential_mechanism_exceeds_its_claim():
    broken = ExponentialMechanism(epsilon=2 * EPS)  # forgot the factor 2 in eps / (2 Δ)
    result = run(selection(broken), EM_A, EM_B)
    assert result.eps_lower > EPS, result


def test_secure_mode_laplace_stays_below_its_claim():
    """The exact sampler of secure mode, fed replayable bits so the verdict repeats."""
    mech = Laplace(epsilon=EPS, mode="secure")
    bits = SeededEntropy(11)
    result = run(lambda x, rng, n: mech.randomise(np.full(n, x), bits).value, 0.0, 1.0)
    assert 0.0 <= result.eps_lower < EPS, result


def test_secure_mode_laplace_on_os_entropy_stays_below_its_claim():
    """On OS entropy nothing can be seeded: the bound is taken at 0.9999, so a correct
    sampler fails this test with probability below 1e-4 (0.95 would fail one run in 20)."""
    mech = Laplace(epsilon=EPS, mode="secure")  # OS entropy; the rng is not used
    result = run(batched(mech), 0.0, 1.0, n=10_000, confidence=0.9999)
    assert 0.0 <= result.eps_lower < EPS, result


def test_whole_protocol_callable_is_audited_run_by_run():
    """A protocol ``(dataset, rng) -> output``; the datasets differ in one record."""
    mech = Laplace(epsilon=EPS, sensitivity=1.0)

    def protocol(dataset, rng):
        count = float(np.sum(np.asarray(dataset) > 0.5))  # a counting query, sensitivity 1
        return mech.randomise(count, rng)  # a Release: the auditor reads its value

    d1 = [0.1, 0.9, 0.7, 0.2]
    d2 = d1 + [0.8]
    result = audit(protocol, d1, d2, n_samples=10_000, rng=np.random.default_rng(3))
    assert 0.3 < result.eps_lower < EPS
    assert result.n_samples == 10_000 and result.confidence == 0.95


def test_vector_outputs_need_a_feature():
    mech = PlanarLaplace(epsilon=EPS)
    with pytest.raises(ValueError, match="feature"):
        audit(
            lambda p, rng: mech.randomise(p, rng).value,
            [0.0, 0.0],
            [1.0, 0.0],
            n_samples=200,
            rng=np.random.default_rng(0),
        )
    result = audit(
        lambda p, rng: mech.randomise(p, rng).value,
        [0.0, 0.0],
        [1.0, 0.0],
        n_samples=2000,
        rng=np.random.default_rng(0),
        feature=lambda z: z[0],
    )
    assert result.eps_lower < EPS


def test_identical_inputs_show_no_leakage():
    result = run(batched(Laplace(epsilon=EPS)), 0.0, 0.0, n=20_000)
    assert result.eps_lower < 0.2


def test_result_describes_the_event():
    result = CORRECT["exponential"]()
    assert "output in {" in result.event and "more likely under input" in result.event
    assert sum(result.hits) > 0


def test_clopper_pearson_edges():
    assert clopper_pearson(0, 10, 0.025)[0] == 0.0
    assert clopper_pearson(10, 10, 0.025)[1] == 1.0
