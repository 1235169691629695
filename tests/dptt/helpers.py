"""Small builders for the DP-TT tests."""

from __future__ import annotations

import numpy as np

from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.driver import run_dptt
from ppknn.protocols.dptt.parties import dptt_specs


def run_recorded(points, queries, setup: DPTTSetup, *, seed: int = 0, kind: str = "inprocess",
                 tree=None, budget=None, transcript_dir=None, client_factory=None):
    """Run one batch with the transcript recorded; returns (result, messages with provenance)."""
    specs = dptt_specs(run_id="t", points=None if tree is not None else points, tree=tree,
                       seed=seed, budget=budget)
    if client_factory is not None:
        specs[0] = type(specs[0])(specs[0].party_id, client_factory, specs[0].kwargs)
    rt = make_runtime(kind)
    try:
        rt.start(specs, RunContext(run_id="t", transcript_dir=transcript_dir))
        result = run_dptt(rt, queries, setup)
        rt.close_transcript()
        table = (Transcript(transcript_dir).table() if transcript_dir is not None
                 else rt.transcript_table())
    finally:
        rt.shutdown()
    return result, Transcript(table).messages(with_provenance=True)


def server_paths(messages, n_queries: int) -> np.ndarray:
    """Each slot's path as the server sees it: its bits, round by round, as one integer."""
    nodes = {m.round: m for m in messages if m.kind == "nodes"}
    path = np.zeros(n_queries, dtype=np.int64)
    for m in sorted((m for m in messages if m.kind == "bits"), key=lambda m: m.round):
        slots = np.asarray(nodes[m.round].payload["slot"], dtype=np.int64)
        path[slots] = 2 * path[slots] + np.asarray(m.payload["bits"], dtype=np.int64)
    return path
