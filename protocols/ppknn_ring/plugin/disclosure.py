"""Per-node disclosure probability of PP-TopK, computed from a transcript alone.

See :mod:`protocols.ppknn_ring.pp_topk_attacks` for the adversary and the exact
definition. The public facts an adversary may use (ring, start node,
maximum distance) come from the run's ``public.json``; ground truth comes
only from the transcript's provenance, and only the scorer reads it.

:func:`measure_disclosure` streams the transcript in bounded record batches
(:func:`protocols.ppknn_ring.plugin.attribution.ring_attribution`: groups of nodes whose
vectors fit a state budget, each given its messages after one read of the
transcript), so its memory is neither a round nor the whole transcript and its
time is linear in it; :func:`measure_disclosure_whole`
is the direct version over every message at once (the reference the
streamed one is tested against).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppknn.core.leakage import Claims, DisclosureReport, score_attribution
from ppknn.core.transcript import Transcript, View
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL
from ppknn.protocols.ppknn_ring.pp_topk_attacks import ADVERSARY, successor_attribution


def measure_disclosure(transcript: Transcript, public: Mapping[str, Any]) -> DisclosureReport:
    """Run the successor-attribution attack for every node and score it (streamed)."""
    from ppknn.protocols.ppknn_ring.plugin.attribution import ring_attribution

    return ring_attribution(transcript, public)[0]


def measure_disclosure_whole(transcript: Transcript, public: Mapping[str, Any]
                             ) -> DisclosureReport:
    """The same measure over the whole transcript at once (reference)."""
    with_truth = transcript.messages(with_provenance=True, protocol=PROTOCOL)
    claims = Claims(ADVERSARY)
    for view in View.per_party(with_truth, public["party_index"]).values():
        claims.items.extend(
            successor_attribution(view, max_distance=float(public["max_distance"])).items
        )
    return score_attribution(claims, with_truth, dict(public["party_index"]),
                             int(public["n_queries"]))


__all__ = ["measure_disclosure", "measure_disclosure_whole"]
