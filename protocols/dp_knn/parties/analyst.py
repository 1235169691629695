"""An analyst (querier): holds test instances, asks the DP owner, keeps the answers.

The analyst's test instances are its own input; it learns only the owner's
ε-DP answers (or that a batch was refused: its budget did not allow it).
Request ids are consecutive per analyst (the owner refuses a reused id,
because it derives the noise stream from it).

Two ways of asking (Gursoy et al. §7, "availability of test data in a batch"):

* :meth:`Analyst.request` -- the whole batch in one message (the proposed
  r-N classifier's sensitivity analysis then sees every overlap);
* :func:`one_at_a_time` -- one message per test instance, each with its
  share of the budget (the owner cannot optimise across them: the proposed
  classifier then behaves like the baseline).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_knn.protocol import Query
>>> alice = Analyst(party_id="alice", owner="owner", run_id="r")
>>> q = Query(task="knn", algorithm="baseline", x=np.zeros((3, 2)), k=5, epsilon=0.75)
>>> [m.payload["request"].item() for m in (alice.request(q), alice.request(q))]
[0, 1]
>>> [s.epsilon for s in one_at_a_time(q)]
[0.25, 0.25, 0.25]
"""

from __future__ import annotations

import dataclasses

from ppknn.core.messages import Message, PartyId
from ppknn.core.service import REFUSED, Refused, read_refusal
from ppknn.protocols.dp_knn.api import AnalystAPI
from ppknn.protocols.dp_knn.protocol import Answer, Query


class Analyst(AnalystAPI):
    """A querier of the DP owner.

    Parameters
    ----------
    party_id:
        This analyst's name (the owner's per-analyst budget is keyed by it).
    owner:
        The DP owner's party name.
    run_id:
        The run's id.
    index:
        This party's provenance code.
    """

    def __init__(self, *, party_id: PartyId, owner: PartyId, run_id: str, index: int = 1) -> None:
        self.party_id = party_id
        self.owner = owner
        self.run_id = run_id
        self.index = int(index)
        self._next = 0
        self.answers: dict[int, Answer] = {}
        self.refused: dict[int, Refused] = {}

    def request(self, query: Query, round: int = 0) -> Message:
        """The message asking the owner to answer ``query`` (a fresh request id)."""
        rid, self._next = self._next, self._next + 1
        return query.to_message(run_id=self.run_id, sender=self.party_id, receiver=self.owner,
                                request=rid, round=round, provenance=self.index)

    def receive(self, reply: Message) -> Answer | Refused:
        """Keep the owner's answer (or refusal) and return it."""
        if reply.kind == REFUSED:
            refused = read_refusal(reply)
            self.refused[refused.request] = refused
            return refused
        answer = Answer.from_message(reply)
        self.answers[answer.request] = answer
        return answer

    @property
    def spent(self) -> float:
        """ε of all answers received so far (what the owner charged this analyst)."""
        return float(sum(a.epsilon for a in self.answers.values()))


def one_at_a_time(query: Query) -> list[Query]:
    """Split a batch into single-instance queries, each with ``epsilon / Q``."""
    q = query.n_queries
    each = query.epsilon / q
    out = []
    for i in range(q):
        changes: dict[str, object] = {"x": query.x[i:i + 1], "epsilon": each}
        if query.task == "rn":
            changes["radius"] = query.radius[i:i + 1]
        else:
            changes["k"] = query.k[i:i + 1]
        fields = {f.name: getattr(query, f.name) for f in dataclasses.fields(query) if f.init}
        fields.update(changes)
        out.append(Query(**fields))
    return out


__all__ = ["Analyst", "one_at_a_time"]
