"""DP-TT on one runtime for many batches: the session behind sweeps and benchmarks.

A :class:`DPTTSession` hosts one client and one server (:func:`protocols.dptt.parties.dptt_specs`)
on a runtime it starts, runs batches through :func:`protocols.dptt.driver.run_dptt`
and shuts the runtime down when closed; :func:`run_batch` is one batch on a
fresh session.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dptt import DPTTSetup, Utility
>>> rng = np.random.default_rng(0)
>>> with DPTTSession(points=rng.uniform(0, 1, (1000, 2)), seed=1) as session:
...     result = session.run(rng.uniform(0, 1, (5, 2)),
...                          DPTTSetup(variant="E4", utility=Utility.cmp(), epsilon=2.0))
>>> result.account.compositions, result.rounds, int(result.outcome.released.max()) <= 16
(6, 6, True)
"""

from __future__ import annotations

from typing import Any

from ppknn.core.runtime import RunContext, make_runtime
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.driver import DPTTResult, run_dptt
from ppknn.protocols.dptt.parties import dptt_specs
from ppknn.protocols.dptt.tree import ModifiedKDTree


class DPTTSession:
    """A runtime hosting one client and one server for many batches (sweeps, benchmarks).

    Parameters
    ----------
    tree, points:
        The server's data: a prebuilt tree or the points to build it from.
    runtime:
        ``"inprocess"`` or ``"ray"``.
    seed:
        Root seed (the client's exponential-mechanism stream).
    record:
        Record the transcript (off for sweeps that only need the outputs).
    transcript_dir:
        Where the transcript goes (``None``: memory).
    secure_channels:
        Encrypt and authenticate every message.
    run_id:
        Bound into every message.
    """

    def __init__(self, *, tree: ModifiedKDTree | None = None, points: Any = None,
                 runtime: str = "inprocess", seed: int = 0, record: bool = True,
                 transcript_dir: Any = None, secure_channels: bool = False,
                 run_id: str = "dptt") -> None:
        self.runtime = make_runtime(runtime)
        try:
            self.runtime.start(dptt_specs(run_id=run_id, points=points, tree=tree, seed=seed),
                               RunContext(run_id=run_id, transcript_dir=transcript_dir,
                                          secure_channels=secure_channels, record=record))
        except BaseException:
            self.runtime.shutdown()
            raise
        self.totals: dict[str, Any] = {}

    def run(self, queries: Any, setup: DPTTSetup) -> DPTTResult:
        """Run one batch (see :func:`~protocols.dptt.driver.run_dptt`)."""
        return run_dptt(self.runtime, queries, setup)

    def close(self) -> dict[str, Any]:
        """Close the transcript and shut the runtime down; returns the communication totals."""
        try:
            self.totals = self.runtime.close_transcript()
        finally:
            self.runtime.shutdown()
        return self.totals

    def __enter__(self) -> DPTTSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_batch(queries: Any, setup: DPTTSetup, *, tree: ModifiedKDTree | None = None,
              points: Any = None, runtime: str = "inprocess", seed: int = 0,
              run_id: str = "dptt", transcript_dir: Any = None,
              secure_channels: bool = False) -> tuple[DPTTResult, dict[str, Any]]:
    """Start a fresh runtime, run one batch, close it; returns the result and the totals."""
    session = DPTTSession(tree=tree, points=points, runtime=runtime, seed=seed,
                          transcript_dir=transcript_dir, secure_channels=secure_channels,
                          run_id=run_id)
    with session:
        result = session.run(queries, setup)
    return result, session.totals


__all__ = ["DPTTSession", "run_batch"]
