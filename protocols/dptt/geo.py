"""GEO, the baseline: perturb the query, then answer the noisy point's nearest neighbours.

Geo-indistinguishability (Andrés et al. 2013; thesis §2.2, §6.1) with privacy
level ε* within radius r: per unit of distance ``ε = ε*/r``. In 1-D the
query gets Laplace noise of scale ``r/ε*`` (:class:`core.dp.Laplace` with
sensitivity r); in 2-D planar Laplace with ``ε = ε*/r``
(:class:`core.dp.PlanarLaplace`, radius ~ Gamma(2, 1/ε) by the Lambert-W
inverse CDF). The server answers the noisy point in the clear.

Fairness for variants that release several points (thesis §6.2):

* P(s), GS -- GEO runs as many times as DP-TT released values (each run a
  fresh noisy point, its nearest neighbour released);
* E(s) -- GEO runs once and releases as many nearest neighbours of its
  answer as DP-TT released (tree neighbours against true neighbours);
* N(B) -- GEO runs once and releases the B-neighbourhood of its answer;
* GS-N(B) -- GEO runs as many times as GS found leaves, each answer with
  its B-neighbourhood.

"Neighbourhood of the answer" means the nearest points of the data point
nearest to the noisy point (the found value), as DP-TT's N does. Each GEO
run is given the DP-TT variant's *whole* final ε as its ε* (§6.1: "we use
the final ε ... as the privacy level ε* for GEO"); a run repeated m times
therefore spends m ε* by sequential composition -- generous to GEO, as the
thesis's rule is.

Examples
--------
>>> import numpy as np
>>> geo = Geo(epsilon=2.0, radius=100.0)
>>> geo.per_unit
0.02
>>> geo.perturb(np.zeros((3, 2)), np.random.default_rng(0)).shape
(3, 2)
>>> repeats, nbh = geo_fairness(Variant.parse("E8"), np.array([200, 190]))
>>> repeats.tolist(), nbh.tolist()
([1, 1], [200, 190])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.dp import Laplace, PlanarLaplace
from ppknn.core.dp.validation import check_epsilon, check_mode, check_sensitivity
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.dptt.neighbours import NeighbourIndex, dedupe_pairs
from ppknn.protocols.dptt.variants import Variant


@dataclass(frozen=True, kw_only=True)
class Geo:
    """ε*-geo-indistinguishable perturbation within radius r (1-D or 2-D).

    Parameters
    ----------
    epsilon:
        The privacy level ε*, > 0.
    radius:
        The privacy radius r (the Laplace sensitivity), > 0.
    mode:
        ``"reproducible"`` or ``"secure"``.
    """

    epsilon: float
    radius: float
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "radius", check_sensitivity(self.radius, name="radius"))
        object.__setattr__(self, "mode", check_mode(self.mode))

    @property
    def per_unit(self) -> float:
        """ε per unit of distance, ``ε*/r``."""
        return self.epsilon / self.radius

    def perturb(self, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy copies ``(Q, k)`` of the queries (k = 1 or 2)."""
        q = np.asarray(queries, dtype=np.float64)
        if q.ndim != 2 or q.shape[1] not in (1, 2):
            raise ConfigError(f"GEO perturbs 1-D or 2-D queries of shape (Q, 1) or (Q, 2), "
                              f"got shape {q.shape}")
        if len(q) == 0:
            return q.copy()
        if q.shape[1] == 1:
            mech = Laplace(epsilon=self.epsilon, sensitivity=self.radius, mode=self.mode)
            return np.asarray(mech.randomise(q, rng).value).reshape(q.shape)
        planar = PlanarLaplace(epsilon=self.per_unit, mode=self.mode)
        return np.asarray(planar.randomise(q, rng).value).reshape(q.shape)

    def release(self, index: NeighbourIndex, queries: np.ndarray, rng: np.random.Generator, *,
                repeats: object = 1, neighbourhood: object = 1,
                perturbed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Run GEO ``repeats[q]`` times per query and release ``neighbourhood[q]`` points per run.

        Returns distinct ``(slot, data index)`` pairs, sorted by slot. ``perturbed``: the
        noisy copies of ``queries[slots]`` already drawn (``rng`` is then unused), the
        slots being each query repeated ``repeats[q]`` times in order.
        """
        q = np.asarray(queries, dtype=np.float64)
        n = len(q)
        rep = _per_query(repeats, n, "repeats")
        nbh = _per_query(neighbourhood, n, "neighbourhood")
        slots = np.repeat(np.arange(n, dtype=np.int64), rep)
        noisy = self.perturb(q[slots], rng) if perturbed is None else np.asarray(perturbed)
        if noisy.shape != q[slots].shape:
            raise ConfigError(f"perturbed queries of shape {noisy.shape} do not match the "
                              f"{q[slots].shape} repeated queries")
        found = index.nearest(noisy, 1)[:, 0]
        width = int(nbh.max()) if n else 1
        if width > 1:
            near = index.neighbourhoods(found, width)
            keep = np.arange(near.shape[1]) < nbh[slots][:, None]
            slots = np.broadcast_to(slots[:, None], near.shape)[keep]
            found = near[keep]
        return dedupe_pairs(slots, found, index.n_points)


def _per_query(value: object, n: int, name: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(value, dtype=np.int64), (n,))
    if n and arr.min() < 1:
        raise ConfigError(f"{name} must be >= 1 for every query, got minimum {arr.min()}")
    return arr


def geo_fairness(variant: Variant, found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GEO's ``(repeats, neighbourhood)`` per query matching ``variant`` (module docstring).

    ``found`` is, per query, how many points the DP-TT traversal reached.
    """
    found = np.asarray(found, dtype=np.int64)
    ones = np.ones_like(found)
    b = variant.neighbourhood * ones
    if variant.kind == "E":
        return ones, found
    if variant.kind in ("P", "GS", "GS-N"):
        return found, b
    return ones, b  # basic, N(B)


__all__ = ["Geo", "geo_fairness"]
