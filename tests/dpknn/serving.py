"""A DP owner serving several analysts through a runtime (shared by the concurrency tests)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ppknn.core.runtime import RunContext, make_runtime
from ppknn.protocols.dp_knn.parties import analyst_spec, dp_owner_spec
from ppknn.protocols.dp_knn.protocol import Query
from tests.dpknn.conftest import owner_kwargs

XQ = np.random.default_rng(7).random((60, 2))
ALGORITHMS = [("rn", "proposed", {"radius": 0.1}), ("knn", "noninteractive", {"k": 5}),
              ("rn", "baseline-laplace", {"radius": 0.1}), ("knn", "baseline", {"k": 5})]


def query(epsilon, i=0):
    """A 60-instance batch; ``i`` picks the task and algorithm."""
    task, algorithm, extra = ALGORITHMS[i % len(ALGORITHMS)]
    return Query(task=task, algorithm=algorithm, x=XQ, epsilon=epsilon, **extra)


def serve(kind, *, analysts=8, max_concurrency=8, transcript_dir=None, **owner):
    """A started runtime hosting ``owner`` and analysts ``a0``, ``a1``, ...; returns it and them.

    The owner's spec has ``max_concurrency`` (its calls run concurrently on Ray).
    """
    names = [f"a{i}" for i in range(analysts)]
    spec = dataclasses.replace(dp_owner_spec(**owner_kwargs(**owner)),
                               max_concurrency=max_concurrency)
    rt = make_runtime(kind)
    rt.start([spec] + [analyst_spec(party_id=n, owner="owner", run_id="run", index=i + 1)
                       for i, n in enumerate(names)],
             RunContext(run_id="run", transcript_dir=transcript_dir, secure_channels=True,
                        party_timeout_s=120))
    return rt, names


def rounds_of_requests(names, epsilon, per_analyst):
    """Every analyst's j-th request before anyone's (j+1)-th: ``(analyst, "owner", query)``."""
    return [(a, "owner", query(epsilon, i + j)) for j in range(per_analyst)
            for i, a in enumerate(names)]
