"""Measuring DP-TT and GEO on one dataset: the rows behind every figure of the reproduction.

A :class:`Bench` holds one dataset (the server's tree, an exact neighbour
index, a query batch and its true neighbours) and a :class:`DPTTSession`;
:meth:`Bench.dptt` runs a batch through the client/server protocol and
:meth:`Bench.geo` the GEO baseline with the thesis's fairness rule, each
returning a :class:`Row` of the figure tables.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dptt.utility import Utility
>>> rng = np.random.default_rng(0)
>>> with Bench(points=rng.uniform(0, 100, (500, 2)), queries=rng.uniform(0, 100, (50, 2)),
...            seed=1) as bench:
...     row, found = bench.dptt("E4", Utility.cmp(), epsilon=20.0)
...     geo = bench.geo("E4", found, epsilon=row.final_epsilon_br, radius=10.0)
>>> row.compositions, row.nn_accuracy > 0.5, geo.method
(5, True, 'GEO')
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ppknn.core.rng import SeedPolicy
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.geo import Geo, geo_fairness
from ppknn.protocols.dptt.metrics import Truth, hits
from ppknn.protocols.dptt.neighbours import NeighbourIndex, counts_per_slot
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import DEFAULT_DELTA, Variant
from ppknn_reproductions.experiments.dptt_session import DPTTSession

NAN = float("nan")


@dataclass(frozen=True, kw_only=True)
class Row:
    """One measured configuration.

    Attributes
    ----------
    method:
        ``"DP-TT"`` or ``"GEO"``.
    dims, n_points, n_queries:
        The dataset and batch.
    utility:
        ``"cmp"``, ``"dis"`` (DP-TT) or ``"-"`` (GEO).
    variant:
        The DP-TT variant (for GEO: the variant whose release it matches).
    epsilon:
        DP-TT: ε per decision. GEO: the privacy level ε*.
    radius:
        DIS sensitivity bound / GEO privacy radius (NaN for CMP).
    compositions, final_epsilon_br, final_epsilon_sum:
        DP-TT's accounting (GEO rows copy the matched variant's).
    geo_per_unit:
        GEO's ε per unit of distance, ε*/r (NaN for DP-TT).
    nn_accuracy, top5_accuracy:
        Raw and top-5 accuracy.
    released_mean:
        Points released per query, mean.
    seen_fraction:
        Mean fraction of the data the client received per query (DP-TT only).
    rounds, messages:
        Client/server rounds and messages (GEO: 1 and 2).
    stated_final_epsilon_br:
        The final ε the thesis would state for the run (ε-bounded-range
        decisions; equals ``final_epsilon_br`` under the proven calibration).
    calibration:
        The exponential mechanism's calibration (:class:`~protocols.dptt.config.DPTTSetup`).
    """

    method: str
    dims: int
    n_points: int
    n_queries: int
    utility: str
    variant: str
    epsilon: float
    radius: float
    compositions: int
    final_epsilon_br: float
    final_epsilon_sum: float
    geo_per_unit: float
    nn_accuracy: float
    top5_accuracy: float
    released_mean: float
    seen_fraction: float
    rounds: int
    messages: int
    stated_final_epsilon_br: float = NAN
    calibration: str = "proven"

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for CSV)."""
        return asdict(self)


class Bench:
    """One dataset and query batch, measured under DP-TT variants and GEO.

    Parameters
    ----------
    points, queries:
        The server's data ``(N, k)`` and the client's queries ``(Q, k)``.
    tree:
        The tree over ``points`` if already built.
    runtime:
        ``"inprocess"`` or ``"ray"``.
    seed:
        Root seed: the client's stream and GEO's streams derive from it.
    delta:
        δ of the bounded-range accounting.
    record:
        Record transcripts (off by default: sweeps need only the outputs).
    """

    def __init__(self, *, points: Any, queries: Any, tree: ModifiedKDTree | None = None,
                 runtime: str = "inprocess", seed: int = 0, delta: float = DEFAULT_DELTA,
                 record: bool = False) -> None:
        self.tree = tree if tree is not None else ModifiedKDTree.build(points)
        self.queries = self.tree.check_queries(queries)
        self.index = NeighbourIndex(self.tree.points)
        self.truth = Truth.of(self.index, self.queries)
        self.policy = SeedPolicy(root=seed)
        self.delta = delta
        self.session = DPTTSession(tree=self.tree, runtime=runtime, seed=seed, record=record)

    @property
    def dims(self) -> int:
        """The number of coordinates."""
        return self.tree.dim

    def close(self) -> None:
        """Shut the session down."""
        self.session.close()

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def dptt(self, variant: str | Variant, utility: Utility, epsilon: float
             ) -> tuple[Row, np.ndarray]:
        """Run DP-TT; returns the row and, per query, how many points the traversal reached."""
        setup = DPTTSetup(variant=Variant.parse(variant), utility=utility, epsilon=epsilon,
                          delta=self.delta)
        res = self.session.run(self.queries, setup)
        out = res.outcome
        nn, top5 = hits(self.tree.points, self.queries, self.truth, out.slots, out.ids)
        acct = res.account
        row = Row(method="DP-TT", dims=self.dims, n_points=self.tree.n_points,
                  n_queries=len(self.queries), utility=utility.name, variant=setup.variant.label,
                  epsilon=setup.epsilon,
                  radius=utility.sensitivity if utility.name == "dis" else NAN,
                  compositions=acct.compositions, final_epsilon_br=acct.epsilon_br,
                  final_epsilon_sum=acct.epsilon_sum, geo_per_unit=NAN,
                  nn_accuracy=float(nn.mean()), top5_accuracy=float(top5.mean()),
                  released_mean=float(out.released.mean()),
                  seen_fraction=float(out.seen.mean()) / self.tree.n_points,
                  rounds=res.rounds, messages=res.messages)
        return row, out.found

    def geo(self, variant: str | Variant, found: np.ndarray, *, epsilon: float, radius: float,
            account: Row | None = None) -> Row:
        """Run GEO at privacy level ``epsilon`` within ``radius``, released as ``variant`` was."""
        v = Variant.parse(variant)
        mech = Geo(epsilon=epsilon, radius=radius)
        rng = self.policy.generator("geo", self.dims, self.tree.n_points, v.label,
                                    repr(float(epsilon)), repr(float(radius)))
        repeats, nbh = geo_fairness(v, found)
        slots, ids = mech.release(self.index, self.queries, rng, repeats=repeats,
                                  neighbourhood=nbh)
        nn, top5 = hits(self.tree.points, self.queries, self.truth, slots, ids)
        return Row(method="GEO", dims=self.dims, n_points=self.tree.n_points,
                   n_queries=len(self.queries), utility="-", variant=v.label,
                   epsilon=mech.epsilon, radius=mech.radius,
                   compositions=account.compositions if account else 0,
                   final_epsilon_br=account.final_epsilon_br if account else NAN,
                   final_epsilon_sum=account.final_epsilon_sum if account else NAN,
                   geo_per_unit=mech.per_unit, nn_accuracy=float(nn.mean()),
                   top5_accuracy=float(top5.mean()),
                   released_mean=float(counts_per_slot(slots, len(self.queries)).mean()),
                   seen_fraction=NAN, rounds=1, messages=2)


def binomial_se(p: float, n: int) -> float:
    """Standard error of an accuracy p measured on n queries."""
    return math.sqrt(max(p * (1 - p), 0.25 / n) / n) if n else NAN


__all__ = ["Bench", "Row", "binomial_se"]
