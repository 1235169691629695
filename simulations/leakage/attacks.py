"""Every attack the leakage table can run, by protocol and name, with its scorer.

An attack runs over **views** (a party's or a coalition's messages, no
provenance) through the protocol's adversary code (``protocols/<x>/``), and
is scored here against provenance or the run's ground truth
(:mod:`simulations.leakage.truth`). Each attack returns
:class:`~simulations.leakage.table.LeakageRow` rows.

Default attacks (run after every run) and scripted ones (``[[adversary]]``
in the scenario, with ``observers`` and parameters) share one registry;
:func:`allowed` lists the names per protocol.

Definitions (the protocols' documented guarantees in brackets):

``ppknn-ring`` [no DP; the paper measures per-node disclosure]
    ``successor-attribution``: the paper's §6.6 attack, per node (observer: its
    successor). ``informed-successor``: the same, keeping only values that
    survive into the public final vector. ``secure-sum-neighbours``: the two ring
    neighbours of a node pool their secure-sum views and subtract; the rate is the
    fraction of queries whose vote vector they recover exactly (0 with the
    secret-shared sum). The start node is no exception in the ring sum: its
    neighbours hold the mask (its successor received it) and the broadcast total.
    ``mask-reuse`` (scripted): one node alone against the partial sum it receives
    (differencing queries), at chance with fresh masks, exact with a reused one.
    ``coalition-attribution`` (scripted ``observers``): any coalition attributes
    values to each non-member between two members.
``ring-nb`` [ε-DP release; the start node is trusted with the exact total]
    ``secure-sum-neighbours``: as above on the statistics vectors.
    ``model-membership-inference``: each owner that received the model, against
    the union's rows (members) vs the query rows (non-members); empirical ε lower
    bound vs the release's ε.
``dp-knn`` [ε-DP per request, ledger]
    ``analyst-label-inference``: per analyst (or a scripted coalition pooling
    answers), the fraction of instances whose claimed label equals the noiseless
    one; no ε bound applies to an aggregate label (an empirical ε needs
    neighbouring datasets: ``ppknn audit``), the ledger's ε is in the note.
    This rate is **not** converted to an ε: ε compares one output's probability
    on two neighbouring datasets, and one run holds one dataset. The rate at
    which a noisy label matches the noiseless one is set by each region's count
    margin against the noise (a margin of 20 votes gives ~1 at any ε; a tie gives
    ~1/2 at every ε), so reading it as randomised response, ε = ln(p / (1 - p)),
    would report "above ε" for every clear-cut region of an honest owner and
    "within" for a broken one on ties. The audit (:mod:`.audit`) reruns the
    release on a dataset without one record and bounds ε from the two samples.
``dp-nb`` [ε-DP per released model]
    ``model-membership-inference`` per analyst (or coalition): empirical ε lower
    bound beside the ε of the models it received (composed by summation, δ
    likewise); a non-private model (ε = 0 charged) gives no bound.
    ``owner-sees-requests``: the fraction of an analyst's requests carrying any
    query row (its private instances) in any field.
``pca-perturbation`` [no DP: amplification e^(1/b) per column, ρ1→ρ2]
    ``transform-attack``: per record, the RMS error of the miner's reconstruction
    (mean with a t interval), and the fraction of values reconstructed within
    ``±reach`` (default 0.05 of the range) against the ρ1→ρ2 bound with
    ρ1 = 2·reach (a uniform prior) and γ the release's claimed amplification.
    ``correlation-attack``: PCA filtering with the attacker's best s2 (oracle);
    average privacy, no bound. ``sanitizer-sees-instances``: the fraction of the
    miner's instances found in any message the sanitizer received (none: the
    release is one-way), no bound.
``dptt`` [ε per decision, composed ε per query]
    ``server-side-inference``: the server claims the side each bit names; with CMP
    the success rate p gives the empirical per-decision ε = ln(p/(1-p)) (its
    Clopper-Pearson lower bound is compared with the per-decision ε);
    ``server-location-inference``: error distance of the server's estimate of each
    query (mean of the points released for it).
    ``geo-server-location-inference`` (with the GEO baseline): the GEO server's
    estimate of each query, the mean of the noisy copies it answered for it;
    error distance beside the expected error of one planar Laplace draw, 2r/ε*
    (GEO's view is saved with the ground truth: GEO runs outside the runtime).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppknn.core.dp.audit import clopper_pearson
from ppknn.core.errors import ConfigError
from ppknn.core.leakage import message_key, score_attribution
from ppknn.core.transcript import Transcript, View
from ppknn.simulations.leakage.stream import random_claim_miss
from ppknn.simulations.leakage.table import (
    LeakageRow,
    bound_baseline,
    clustered_proportion_row,
    epsilon_row,
    mean_row,
    paired_mean_difference,
    paired_rate_baseline,
    proportion_row,
    rate_baseline,
    with_baseline,
)

Truth = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Adversary:
    """One adversary to score: the attack, optional observers, parameters."""

    protocol: str
    attack: str
    observers: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    scripted: bool = False


@dataclass
class Context:
    """What a scorer gets: the transcript, the protocol's public facts, ground truth."""

    protocol: str
    transcript: Transcript
    public: Mapping[str, Any]
    truth: Truth
    _messages: dict[bool, list] = field(default_factory=dict)

    def messages(self, *, with_provenance: bool = False,
                 protocol: str | None = None) -> list:
        """Messages of a protocol (cached per provenance flag for the run's own protocol)."""
        if protocol is not None and protocol != self.protocol:
            return self.transcript.messages(with_provenance=with_provenance, protocol=protocol)
        if with_provenance not in self._messages:
            self._messages[with_provenance] = self.transcript.messages(
                with_provenance=with_provenance, protocol=self.protocol)
        return self._messages[with_provenance]

    def view(self, parties: Sequence[str], *, protocol: str | None = None) -> View:
        """The pooled view of ``parties`` (provenance stripped)."""
        return View.of(self.messages(protocol=protocol), parties)


Scorer = Callable[[Context, Adversary], list[LeakageRow]]


@dataclass(frozen=True)
class Attack:
    """A registered attack."""

    protocol: str
    name: str
    scorer: Scorer
    default: bool
    params: tuple[str, ...] = ()
    needs_observers: bool = False
    description: str = ""
    by_design: bool = False
    """The attack measures what the protocol hands a party by design (a role trusted with
    it: the DP owner reads the analysts' instances); reported, not ranked as a leak."""


_ATTACKS: dict[tuple[str, str], Attack] = {}


def register(protocol: str, name: str, *, default: bool, params: tuple[str, ...] = (),
             needs_observers: bool = False, description: str = "", by_design: bool = False
             ) -> Callable[[Scorer], Scorer]:
    """Register a scorer (decorator); ``by_design``: see :attr:`Attack.by_design`."""
    def wrap(fn: Scorer) -> Scorer:
        _ATTACKS[(protocol, name)] = Attack(protocol, name, fn, default, params,
                                            needs_observers, description, by_design)
        return fn
    return wrap


def allowed(protocol: str) -> list[str]:
    """The attack names a protocol accepts."""
    return sorted(n for p, n in _ATTACKS if p == protocol)


def get(protocol: str, name: str) -> Attack:
    """The attack ``name`` of ``protocol``; ``ConfigError`` listing the allowed ones."""
    attack = _ATTACKS.get((protocol, name))
    if attack is None:
        raise ConfigError(f"unknown attack {name!r} for protocol {protocol!r}; allowed: "
                          f"{allowed(protocol)}")
    return attack


def defaults(protocol: str) -> list[Adversary]:
    """The attacks a plain run scores for ``protocol``: its plugin's ``adversaries``.

    A protocol registered without this package's attacks (a third-party plugin)
    scores the attacks registered here as defaults for it, if any.
    """
    from ppknn.simulations import registry

    plugin = registry.find(protocol)
    names = [n for n in (plugin.adversaries if plugin is not None else ())
             if (protocol, n) in _ATTACKS]
    if not names:
        names = [a.name for (p, _), a in sorted(_ATTACKS.items()) if p == protocol and a.default]
    return [Adversary(protocol, n) for n in names]


def observer_name(parties: Sequence[str]) -> str:
    """A coalition's name: its members joined by ``+``."""
    return "+".join(parties)


def _ring_neighbours(ring: Sequence[str], party: str,
                     position: Mapping[str, int]) -> tuple[str, str]:
    """``party``'s predecessor and successor (``position``: :func:`_positions` of ``ring``)."""
    i = position[party]
    return ring[(i - 1) % len(ring)], ring[(i + 1) % len(ring)]


def _positions(ring: Sequence[str]) -> dict[str, int]:
    """Each party's index in the ring (a ring of 100,000 is not searched per node)."""
    return {p: i for i, p in enumerate(ring)}


# -- ppknn-ring --------------------------------------------------------------------------
RING = "ppknn-ring"


def _observer_filter(adv: Adversary, ring: Sequence[str]) -> Callable[[str], str]:
    position = _positions(ring)

    def observer_of(target: str) -> str:
        succ = _ring_neighbours(ring, target, position)[1]
        if adv.observers and succ not in adv.observers:
            return ""
        return succ
    return observer_of


def _streamed(ctx: Context) -> tuple[Any, Any]:
    """Successor and informed reports, one bounded-memory pass, cached on the context."""
    from ppknn.simulations.leakage.stream import ring_attribution

    key = "_ring_attribution"
    cache = ctx.__dict__.setdefault("_cache", {})
    if key not in cache:
        cache[key] = ring_attribution(ctx.transcript, ctx.public)
    return cache[key]


RANDOM_CLAIM = ("a random claimer: as many values as the attack claimed in each vector "
                "row, drawn at random from that row (expected rate from provenance)")


def random_claim_baseline(row: LeakageRow, *, hits: np.ndarray, chance: np.ndarray
                          ) -> LeakageRow:
    """A disclosure row's baseline: the random claimer's expected rate on the same queries.

    ``hits[q]``: whether the attack disclosed the target on query ``q``; ``chance[q]``:
    the probability that the random claimer (:data:`RANDOM_CLAIM`) does. The baseline is
    the mean chance, its interval the spread of a random claimer's realised rate (normal
    approximation to the Poisson-binomial); the advantage is the mean of ``hits - chance``
    over the queries with its Student-t interval.
    """
    p = np.asarray(chance, dtype=np.float64)
    n = int(p.size)
    if n == 0:
        return with_baseline(row, name=RANDOM_CLAIM, baseline=(math.nan,) * 3,
                             advantage=(math.nan,) * 3)
    mean = float(p.mean())
    half = 1.959964 * math.sqrt(float(np.sum(p * (1 - p)))) / n
    return with_baseline(row, name=RANDOM_CLAIM,
                         baseline=(mean, max(0.0, mean - half), min(1.0, mean + half)),
                         advantage=paired_mean_difference(np.asarray(hits, dtype=np.float64), p))


def _report_rows(ctx: Context, adv: Adversary, report: Any, quantity: str, note: str
                 ) -> list[LeakageRow]:
    observer_of = _observer_filter(adv, list(ctx.public["ring"]))
    chance = getattr(report, "chance", {})
    hits = getattr(report, "hits", {})
    pool = getattr(report, "pool", {})
    rows = []
    for d in report.parties:
        observer = observer_of(d.party)
        if not observer:
            continue
        precision = "n/a" if math.isnan(d.precision) else f"{d.precision:.3f}"
        have, of = pool.get(d.party, (0, 0))
        random_precision = f"{have / of:.3f}" if of else "n/a"
        row = proportion_row(
            successes=d.disclosed, trials=d.trials, protocol=ctx.protocol, observer=observer,
            target=d.party, attack=adv.attack, quantity=quantity,
            note=f"claims' precision {precision} ({d.correct}/{d.claimed} values), a random "
                 f"claim's {random_precision} ({have}/{of}); {note}")
        if d.party in chance:
            row = random_claim_baseline(row, hits=hits[d.party], chance=chance[d.party])
        rows.append(row)
    return rows


@register(RING, "successor-attribution", default=True,
          description="the paper's §6.6 attack by each node's successor")
def _successor(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    return _report_rows(ctx, adv, _streamed(ctx)[0], "disclosure probability (paper §6.6)",
                        "the paper measures disclosure but promises no bound")


@register(RING, "informed-successor", default=True,
          description="the successor keeps only claims that survive into the final vector")
def _informed(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    return _report_rows(ctx, adv, _streamed(ctx)[1], "disclosure probability (informed)",
                        "stronger than the paper's attacker; no bound")


@register(RING, "coalition-attribution", default=False, needs_observers=True,
          params=("informed",),
          description="a coalition attributes values to every non-member")
def _coalition(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    """Two rows per non-member: §6.6's "any claim right" and one guess per query.

    The single guess (:func:`~protocols.ppknn.pp_topk_attacks.single_guess`) is
    compared with a guess of one value drawn at random from the public final
    vector (what anyone holding only the public output achieves); "any claim right"
    with a random claimer making as many claims in the same vectors.
    """
    from ppknn.protocols.ppknn.pp_topk import PROTOCOL
    from ppknn.protocols.ppknn.pp_topk_attacks import coalition_attribution, single_guess

    ring = list(ctx.public["ring"])
    members = list(adv.observers)
    view = ctx.view(members, protocol=PROTOCOL)
    informed = bool(adv.params.get("informed", False))
    index = {p: int(i) for p, i in dict(ctx.public["party_index"]).items()}
    n_q = int(ctx.public["n_queries"])
    msgs = ctx.messages(with_provenance=True, protocol=PROTOCOL)
    by_key = {message_key(m): m for m in msgs}
    final = next((m for m in msgs if m.kind == "topk-final"), None)
    name = observer_name(members)
    rows = []
    for target in ring:
        if target in members:
            continue
        claims = coalition_attribution(
            view, target=target, ring=ring, start=ctx.public["start"],
            max_distance=float(ctx.public["max_distance"]), informed=informed)
        guess = single_guess(view, claims)
        (d,) = [x for x in score_attribution(claims, msgs, index, n_q).parties
                if x.party == target]
        (g,) = [x for x in score_attribution(guess, msgs, index, n_q).parties
                if x.party == target]
        hits, miss = np.zeros(n_q, dtype=bool), np.zeros(n_q)
        guessed = np.zeros(n_q, dtype=bool)
        have = of = 0
        for c in claims.items:
            mine = np.asarray(by_key[c.message].provenance["g"]) == index[target]
            mine = np.broadcast_to(mine, c.mask.shape)
            hits |= (c.mask & mine).any(axis=1)
            miss += random_claim_miss(c.mask, mine)
            rows_claimed = c.mask.any(axis=1)
            have += int(mine[rows_claimed].sum())
            of += int(rows_claimed.sum()) * c.mask.shape[1]
        for c in guess.items:
            guessed |= (c.mask & (np.asarray(by_key[c.message].provenance["g"])
                                  == index[target])).any(axis=1)
        precision = "n/a" if math.isnan(d.precision) else f"{d.precision:.3f}"
        rows.append(random_claim_baseline(proportion_row(
            successes=d.disclosed, trials=d.trials, protocol=ctx.protocol, observer=name,
            target=target, attack=adv.attack, quantity="disclosure probability (coalition)",
            note=f"claims' precision {precision} ({d.correct}/{d.claimed} values), a random "
                 f"claim's {have / of if of else math.nan:.3f} ({have}/{of}); values new "
                 "between the members' views (and in the final vector after the last member "
                 "before the target, when the stretch wraps past the start node) are claimed "
                 "as the target's; no bound"), hits=hits, chance=1.0 - np.exp(miss)))
        in_final = (np.zeros(n_q) if final is None else
                    np.mean(np.asarray(final.provenance["g"]) == index[target], axis=1))
        rows.append(
            random_guess_baseline(proportion_row(
                successes=g.disclosed, trials=g.trials, protocol=ctx.protocol, observer=name,
                target=target, attack=adv.attack,
                quantity="single guess right (coalition)",
                note="one value per query named as the target's: the smallest claimed value "
                     "that is in the final vector (none: a miss); grows with the coalition; "
                     "no bound"), hits=guessed, chance=in_final))
    return rows


def random_guess_baseline(row: LeakageRow, *, hits: np.ndarray, chance: np.ndarray
                          ) -> LeakageRow:
    """A single guess's baseline: one value of the public final vector drawn at random."""
    out = random_claim_baseline(row, hits=hits, chance=chance)
    return dataclasses.replace(out, baseline_name=(
        "one value of the public final vector named at random (the target's share of it, "
        "per query)"))


def _sum_rows(ctx: Context, adv: Adversary, *, protocol: str, truth_prefix: str,
              ring_protocol: str, shared_protocol: str | None, kind: str,
              quantity: str, per_query: bool) -> list[LeakageRow]:
    ring = list(ctx.public["ring"])
    targets = [t for t in ring if f"{truth_prefix}{t}" in ctx.truth]
    if adv.observers:  # a scripted coalition: its pooled view of the whole sum
        msgs = [m for p in {ring_protocol, shared_protocol} - {None}
                for m in ctx.messages(protocol=p)]
        return _sum_group(ctx, adv, msgs, targets, truth_prefix=truth_prefix,
                          ring_protocol=ring_protocol, kind=kind, quantity=quantity,
                          per_query=per_query,
                          shared=any(m.kind == "share" for m in msgs),
                          position=_positions(ring))
    # each node's two neighbours: streamed, for groups of targets whose messages (the
    # target's partial sums in and out, or the shares it sent them) fit the state budget;
    # the transcript is read once and each group's messages scattered to it
    from ppknn.simulations.leakage import stream

    if not targets:
        return []
    start = ctx.public["start"]
    position = _positions(ring)
    shared = shared_protocol is not None and bool(stream.rounds_of(ctx.transcript,
                                                                   shared_protocol))
    protocol_read = shared_protocol if shared and shared_protocol else ring_protocol
    vector = np.asarray(ctx.truth[f"{truth_prefix}{targets[0]}"]).nbytes
    size = max(1, int(stream.STATE_BUDGET // (3 * max(vector, 1))))
    group_of = {t: i // size for i, t in enumerate(targets)}
    near_start = set(_ring_neighbours(ring, start, position)) if start in position else set()

    def groups_of(sender: str, receiver: str, kind_: str) -> set[int]:
        if shared:
            g = group_of.get(sender)
            return ({g} if g is not None and kind_ == "share"
                    and receiver in _ring_neighbours(ring, sender, position) else set())
        if kind_ == kind:
            return {g for g in (group_of.get(sender), group_of.get(receiver)) if g is not None}
        if kind_ == "sum-result" and receiver in near_start and start in group_of:
            return {group_of[start]}
        return set()

    rows: list[LeakageRow] = []
    n_groups = -(-len(targets) // size)
    for g, msgs in stream.scatter(ctx.transcript, protocol_read, n_groups, groups_of,
                                  with_provenance=False):
        # copies: a view of a record batch would hold the whole batch
        kept = [dataclasses.replace(m, payload={k: np.array(v) for k, v in m.payload.items()})
                for m in msgs]
        kept.sort(key=lambda m: (m.protocol, m.round, m.sender, m.receiver, m.seq))
        rows.extend(_sum_group(ctx, adv, kept, targets[g * size:(g + 1) * size],
                               truth_prefix=truth_prefix, ring_protocol=ring_protocol,
                               kind=kind, quantity=quantity, per_query=per_query,
                               shared=shared, position=position))
    return rows


def _sum_group(ctx: Context, adv: Adversary, msgs: Sequence[Any], targets: Sequence[str], *,
               truth_prefix: str, ring_protocol: str, kind: str, quantity: str,
               per_query: bool, shared: bool, position: Mapping[str, int]
               ) -> list[LeakageRow]:
    """The secure-sum rows of ``targets``, from the messages their observers need."""
    ring = list(ctx.public["ring"])
    start = ctx.public["start"]
    by_party: dict[str, list[Any]] = {}
    for m in msgs:  # each party's messages, so a view costs its own messages only
        by_party.setdefault(m.sender, []).append(m)
        if m.receiver != m.sender:
            by_party.setdefault(m.receiver, []).append(m)
    rows = []
    for target in targets:
        key = f"{truth_prefix}{target}"
        truth = np.asarray(ctx.truth[key], dtype=np.uint64)
        pred, succ = _ring_neighbours(ring, target, position)
        observers = tuple(adv.observers) if adv.observers else (pred, succ)
        if target in observers:
            continue
        mine = list({id(m): m for o in observers for m in by_party.get(o, ())}.values())
        view = View.of(mine, observers)
        if shared:
            estimate = _shared_estimate(view, target)
        else:
            estimate = _ring_estimate(view, target=target, ring=ring, start=start, kind=kind,
                                      protocol=ring_protocol, position=position)
        t2 = truth.reshape(len(truth), -1) if per_query else truth.reshape(1, -1)
        if estimate is None:
            hits = np.zeros(len(t2), dtype=bool)
        else:
            e2 = np.asarray(estimate, dtype=np.uint64).reshape(t2.shape)
            hits = np.all(e2 == t2, axis=1)
        if per_query:
            pool, base_name = t2, BEST_CONSTANT
        else:  # one vector per target: the most frequent vector over every target
            pool, base_name = _all_vectors(ctx, truth_prefix), BEST_CONSTANT_TARGETS
        base = np.all(t2 == _mode_row(pool), axis=1)
        sum_kind = "secret-shared" if shared else "ring"
        if shared:
            why = "shares of honest nodes hide the target"
        elif target == start and estimate is None:
            why = "no broadcast total: the start node's mask hides the target"
        elif target == start:
            why = ("the broadcast total minus what the neighbours sent and received is the "
                   "start node's vector: the mask does not hide it from both neighbours")
        else:
            why = "no guarantee against colluding neighbours"
        rows.append(paired_rate_baseline(proportion_row(
            successes=int(hits.sum()), trials=len(hits), protocol=ctx.protocol,
            observer=observer_name(sorted(observers)), target=target, attack=adv.attack,
            quantity=quantity, note=f"{sum_kind} secure sum; {why}"),
            hits=hits, base=base, name=base_name))
    return rows


BEST_CONSTANT = ("the best constant guess: the target's most frequent true vector over "
                 "the queries (an oracle choice; no transcript)")
BEST_CONSTANT_TARGETS = ("the best constant guess: the most frequent true vector over "
                         "every target (an oracle choice; no transcript)")
NOTHING_SEEN = ("no transcript: nothing seen (an exact real-valued row or total is not "
                "guessed)")


def _mode_row(rows: np.ndarray) -> np.ndarray:
    """The most frequent row of ``rows`` (the first of the most frequent, sorted)."""
    uniq, counts = np.unique(np.asarray(rows).reshape(len(rows), -1), axis=0,
                             return_counts=True)
    return uniq[int(np.argmax(counts))]


def _all_vectors(ctx: Context, prefix: str) -> np.ndarray:
    """Every party's truth vector under ``prefix`` (one row each), cached on the context."""
    cache = ctx.__dict__.setdefault("_cache", {})
    key = f"_vectors:{prefix}"
    if key not in cache:
        keys = sorted(k for k in ctx.truth if k.startswith(prefix))
        cache[key] = np.stack([np.asarray(ctx.truth[k], dtype=np.uint64).ravel()
                               for k in keys])
    return cache[key]


def _nothing_seen(row: LeakageRow) -> LeakageRow:
    """The baseline of an exact-sighting row: no sighting on the same trials."""
    hits = np.zeros(row.trials, dtype=bool)
    hits[:int(round(row.value * row.trials)) if math.isfinite(row.value) else 0] = True
    return paired_rate_baseline(row, hits=hits, base=np.zeros(row.trials, dtype=bool),
                                name=NOTHING_SEEN)


def _ring_estimate(view: View, *, target: str, ring: list[str], start: str, kind: str,
                   protocol: str, position: Mapping[str, int]) -> np.ndarray | None:
    from ppknn.protocols.ppknn import secure_sum as ss
    from ppknn.protocols.ppknn.secure_sum_attacks import _between

    members = set(view.parties)
    n = len(ring)
    pos = position[target]
    b = next((ring[(pos + j) % n] for j in range(1, n) if ring[(pos + j) % n] in members), None)
    a = next((ring[(pos - j) % n] for j in range(1, n) if ring[(pos - j) % n] in members), None)
    if a is None or b is None:
        return None
    if target == start or start in _between(ring, a, b, position):
        # b received the mask (plus the votes from the start's successor to b's
        # predecessor), a sent the mask plus the votes through a: their difference is the
        # votes from b through a, and the broadcast total minus it is the votes strictly
        # between a and b, the start node's among them. Without a total (ring-nb keeps it
        # at the start node) the mask hides them.
        out = [m for m in view.sent if m.sender == a and m.kind == kind
               and m.protocol == protocol]
        into = [m for m in view.received if m.receiver == b and m.kind == kind
                and m.protocol == protocol]
        total = [m for m in view.received if m.kind == "sum-result" and m.protocol == protocol]
        if not out or not into or not total:
            return None
        return ss.sub(total[0].payload["s"], ss.sub(out[0].payload["s"], into[0].payload["s"]))
    sent = [m for m in view.sent if m.sender == a and m.kind == kind and m.protocol == protocol
            and m.receiver != start]
    got = [m for m in view.received if m.receiver == b and m.kind == kind
           and m.protocol == protocol]
    if not sent or not got:
        return None
    return ss.sub(got[0].payload["s"], sent[0].payload["s"])


def _shared_estimate(view: View, target: str) -> np.ndarray | None:
    from ppknn.protocols.ppknn.secure_sum_attacks import shared_sum_estimate

    return shared_sum_estimate(view, target=target)


@register(RING, "secure-sum-neighbours", default=True,
          description="a node's two ring neighbours pool their secure-sum views")
def _ring_sum(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.ppknn import secure_sum as ss

    return _sum_rows(ctx, adv, protocol=RING, truth_prefix="votes/",
                     ring_protocol=ss.RING_PROTOCOL, shared_protocol=ss.SHARED_PROTOCOL,
                     kind="partial-sum", quantity="vote vector recovered exactly",
                     per_query=True)


@register(RING, "mask-reuse", default=False,
          description="a node alone unmasks the partial sums it receives by differencing "
                      "queries (works when the start node reuses its mask)")
def _ring_mask_reuse(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    """One node, alone, against the ring sum's mask (the sum's single-node guarantee).

    Node ``b`` receives ``M[q] = R[q] + S_t[q]`` from its predecessor ``t``, where
    ``S_t`` is the sum of the vote vectors from the start node's successor through
    ``t`` (``t``'s own votes when ``t`` follows the start node). It subtracts the
    first query's row, ``M[q] - M[0]``, and, since every count is >= 0 and some
    query has none of a class, takes the smallest difference per class as
    ``-S_t[0]``. With a fresh uniform mask per query the difference is uniform and
    the estimate is garbage; with a mask reused across queries it is ``S_t``
    exactly. The bound is the chance level: the rate of the best constant guess
    (the most frequent true ``S_t`` row of the run), which no estimator of a
    uniformly masked view can beat in expectation.
    """
    from ppknn.protocols.ppknn import secure_sum as ss

    ring, start = list(ctx.public["ring"]), ctx.public["start"]
    n = len(ring)
    first = ring.index(start)
    order = [ring[(first + j) % n] for j in range(n)]  # the ring from the start node
    if not all(f"votes/{p}" in ctx.truth for p in order[1:]):
        return []
    received = {m.receiver: m for m in ctx.messages(protocol=ss.RING_PROTOCOL)
                if m.kind == "partial-sum" and m.sender != start}
    shared = any(m.kind == "share" for m in ctx.messages(protocol=ss.SHARED_PROTOCOL))
    rows = []
    partial: np.ndarray | None = None
    for t, b in zip(order[1:-1], order[2:]):
        votes = np.asarray(ctx.truth[f"votes/{t}"], dtype=np.uint64)
        partial = votes if partial is None else ss.add(partial, votes)
        truth = partial.reshape(len(partial), -1)
        if adv.observers and b not in adv.observers:
            continue
        msg = received.get(b)
        if msg is None or shared:
            hits = np.zeros(len(truth), dtype=bool)
        else:
            m = np.asarray(msg.payload["s"], dtype=np.uint64).reshape(truth.shape)
            diff = ss.sub(m, m[:1]).view(np.int64)
            estimate = (diff - diff.min(axis=0, keepdims=True)).view(np.uint64)
            hits = np.all(estimate == truth, axis=1)
        _, counts = np.unique(truth, axis=0, return_counts=True)
        chance = float(counts.max()) / len(truth)
        base = np.all(truth == _mode_row(truth), axis=1)
        what = "its vote vector" if t == order[1] else f"the votes of {order[1]}..{t}"
        rows.append(paired_rate_baseline(proportion_row(
            successes=int(hits.sum()), trials=len(hits), protocol=ctx.protocol, observer=b,
            target=t, attack=adv.attack,
            quantity="masked partial sum recovered exactly (one node alone)",
            bound=chance, bound_name="chance level (best constant guess of this run)",
            note=f"{'secret-shared sum: no ring mask' if shared else 'ring secure sum'}; "
                 f"the partial sum is {what}; a fresh uniform mask per query keeps a single "
                 "node at chance, a reused one does not"), hits=hits, base=base,
            name=BEST_CONSTANT))
    return rows


# -- ring-nb -----------------------------------------------------------------------------
RING_NB = "ring-nb"


@register(RING_NB, "secure-sum-neighbours", default=True,
          description="a node's two ring neighbours pool their secure-sum views")
def _ring_nb_sum(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    return _sum_rows(ctx, adv, protocol=RING_NB, truth_prefix="stats/",
                     ring_protocol=RING_NB, shared_protocol=None, kind="partial-sum",
                     quantity="statistics vector recovered exactly", per_query=False)


@register(RING_NB, "start-node-aggregate", default=True, by_design=True,
          description="the start node unmasks the exact pre-noise total of the others")
def _ring_nb_start(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.ppknn import secure_sum as ss

    ring, start = list(ctx.public["ring"]), ctx.public["start"]
    keys = [f"stats/{p}" for p in ring if p != start]
    if not all(k in ctx.truth for k in keys):
        return []
    msgs = [m for m in ctx.messages() if m.kind == "partial-sum"]
    sent = [m for m in msgs if m.sender == start]
    got = [m for m in msgs if m.receiver == start]
    truth = np.zeros_like(np.asarray(ctx.truth[keys[0]], dtype=np.uint64))
    for k in keys:
        truth = ss.add(truth, np.asarray(ctx.truth[k], dtype=np.uint64))
    shared = any(m.kind == "share" for m in ctx.messages())
    hit = bool(sent and got and not shared
               and np.array_equal(ss.sub(got[0].payload["s"], sent[0].payload["s"]), truth))
    return [_nothing_seen(proportion_row(
        successes=int(hit), trials=1, protocol=ctx.protocol, observer=start,
        target="the other owners (exact statistics before noise)", attack=adv.attack,
        quantity="exact pre-noise aggregate recovered",
        note="the start node subtracts the mask it sent from the sum it received; it is "
             "trusted for the noise step by design (no bound)" if not shared else
             "secret-shared sum: no mask to subtract"))]


def membership_rows(ctx: Context, adv: Adversary, *, observers: Sequence[str],
                    models: Sequence[Mapping[str, Any]], claimed: float | None,
                    bound_name: str, delta: float = 0.0) -> LeakageRow:
    """Membership inference with a test chosen on one half, evaluated on the other.

    The threshold, its direction and the event whose likelihood ratio is bounded
    (``TPR <= e^ε FPR + δ`` for "claim member", ``TNR <= e^ε FNR + δ`` for "claim
    held out") are all fixed on the selection half; the test half then gives one
    Clopper-Pearson bound. Taking the better of the two events on the test half
    would be two tests reported as one (a 90% bound called 95%).

    The members and held-out rows compared are the ground truth's class-matched
    random samples (``members_pick``, ``others_pick``, drawn from the run's seed:
    :func:`~simulations.sampling.matched_sample`), never the first rows of a sorted
    split, which on a class-sorted file are one class: the test would then separate
    classes, not members. A truth saved without them is sampled here, from a fixed
    stream (said in the note).
    """
    from ppknn.protocols.dp_nb.adversary import pooled_scores

    mx, my = ctx.truth["members_X"], ctx.truth["members_y"]
    ox, oy = ctx.truth["others_X"], ctx.truth["others_y"]
    sampled = "class-matched random samples of the run's seed"
    if "members_pick" in ctx.truth and "others_pick" in ctx.truth:
        pick_in = np.asarray(ctx.truth["members_pick"], dtype=np.int64)
        pick_out = np.asarray(ctx.truth["others_pick"], dtype=np.int64)
    else:
        from ppknn.simulations.sampling import matched_sample

        pick_in, pick_out = matched_sample(np.asarray(my), np.asarray(oy),
                                           np.random.default_rng(0))
        sampled = "class-matched random samples of a fixed stream (the truth has none)"
    mx, my, ox, oy = mx[pick_in], my[pick_in], ox[pick_out], oy[pick_out]
    m = min(len(mx), len(ox))
    fields: dict[str, Any] = dict(protocol=ctx.protocol, observer=observer_name(observers),
                                  target="training records (members vs held-out rows)",
                                  attack=adv.attack,
                                  quantity="empirical ε lower bound (membership)",
                                  bound=claimed, bound_name=bound_name)
    if not models or m < 4:
        return LeakageRow(value=float("nan"), ci_low=float("nan"), ci_high=float("nan"),
                          trials=0, note="no model received", **fields)
    s_in = pooled_scores(list(models), mx[:m], my[:m])
    s_out = pooled_scores(list(models), ox[:m], oy[:m])
    note = ("P(claim member | member) {tp}/{n_in}, P(claim member | held out) {fp}/{n_out} "
            "on the test half (threshold, direction and event chosen on the other half by "
            "the Clopper-Pearson bound; event: claim {event}"
            + (f"; δ = {delta:g} subtracted" if delta else "") + f"); log-density score; "
            f"{m} members and {m} held-out rows, {sampled}")
    row = _membership_epsilon(s_in, s_out, delta=delta, note=note, **fields)
    # the same test on a score that reads no model: the log prior of the row's class
    # (the members' class frequencies); on class-matched samples it is at chance
    classes, counts = np.unique(np.asarray(ctx.truth["members_y"]), return_counts=True)
    prior = dict(zip(classes.tolist(), np.log(counts / counts.sum()).tolist()))
    b_in = np.array([prior.get(c, -np.inf) for c in np.asarray(my[:m]).tolist()])
    b_out = np.array([prior.get(c, -np.inf) for c in np.asarray(oy[:m]).tolist()])
    base = _membership_epsilon(b_in, b_out, delta=delta, note="", **fields)
    return bound_baseline(row, baseline=(base.value, base.ci_low, base.ci_high),
                          name="the same test on a score without the model: the log prior "
                               "of the row's class (chance on class-matched samples)")


def _membership_epsilon(s_in: np.ndarray, s_out: np.ndarray, *, delta: float, note: str,
                        **fields: Any) -> LeakageRow:
    """Threshold, direction and event chosen on the even positions, ε bounded on the odd."""
    sel, test = slice(0, None, 2), slice(1, None, 2)
    threshold, direction, event = _select_threshold(s_in[sel], s_out[sel], delta=delta)
    a, b = direction * s_in[test], direction * s_out[test]
    n_in, n_out = len(a), len(b)
    tp, fp = int((a >= threshold).sum()), int((b >= threshold).sum())
    note = note.format(tp=tp, fp=fp, n_in=n_in, n_out=n_out, event=event)
    if event == "member":
        return epsilon_row(hit_a=tp, n_a=n_in, hit_b=fp, n_b=n_out, delta=delta, note=note,
                           **fields)
    return epsilon_row(hit_a=n_out - fp, n_a=n_out, hit_b=n_in - tp, n_b=n_in, delta=delta,
                       note=note, **fields)


@register(RING_NB, "model-membership-inference", default=True,
          description="owners receiving the model test membership of candidate rows")
def _ring_nb_mi(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "members_X" not in ctx.truth:
        return []
    ring = list(ctx.public["ring"])
    lower = np.asarray(ctx.public["bounds"]["lower"])
    upper = np.asarray(ctx.public["bounds"]["upper"])
    groups = [tuple(adv.observers)] if adv.observers else [(p,) for p in ring]
    rows = []
    msgs = ctx.messages()
    for group in groups:
        view = View.of(msgs, group)
        models = [{"theta": m.payload["theta"], "var": m.payload["var"], "lower": lower,
                   "upper": upper} for m in view.received if m.kind == "nb-model"]
        if not models:
            continue
        rows.append(membership_rows(ctx, adv, observers=group, models=models[:1],
                                    claimed=float(ctx.public["epsilon"]),
                                    bound_name="ε of the released model"))
    return rows


def _select_threshold(s_in: np.ndarray, s_out: np.ndarray, *, delta: float = 0.0
                      ) -> tuple[float, int, str]:
    """The threshold, direction and event with the best ε lower bound on the selection half.

    ``(threshold, direction, event)``: "member" is claimed when ``direction * score >=
    threshold``; ``event`` is ``"member"`` (the bound on ``TPR / FPR``) or
    ``"held out"`` (on ``TNR / FNR``).
    """
    from ppknn.simulations.leakage.table import epsilon_from_rates

    best = (-1.0, 0.0, 1, "member")
    qs = np.unique(np.quantile(np.concatenate([s_in, s_out]), np.linspace(0.05, 0.95, 19)))
    n_in, n_out = len(s_in), len(s_out)
    for direction in (1, -1):
        a, b = direction * s_in, direction * s_out
        for t in direction * qs:
            tp, fp = int((a >= t).sum()), int((b >= t).sum())
            for event, lo in (
                    ("member", epsilon_from_rates(tp, n_in, fp, n_out, delta=delta)[1]),
                    ("held out", epsilon_from_rates(n_out - fp, n_out, n_in - tp, n_in,
                                                    delta=delta)[1])):
                if lo > best[0]:
                    best = (lo, float(t), direction, event)
    return best[1], best[2], best[3]


def _analyst_groups(ctx: Context, adv: Adversary) -> list[tuple[str, ...]]:
    """The scripted coalition, or else each analyst on its own."""
    return ([tuple(adv.observers)] if adv.observers
            else [(a,) for a in ctx.public["analysts"]])


# -- dp-knn ------------------------------------------------------------------------------
DP_KNN = "dp-knn"


@register(DP_KNN, "analyst-label-inference", default=True,
          description="an analyst claims each released label is the noiseless one")
def _dp_knn_labels(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dp_knn.adversary import label_claims

    if "queries" not in ctx.truth:
        return []
    truth_x = np.asarray(ctx.truth["queries"])
    truth_y = np.asarray(ctx.truth["nonprivate"])
    index = {row.tobytes(): i for i, row in enumerate(truth_x)}
    groups = _analyst_groups(ctx, adv)
    msgs = ctx.messages()
    rows = []
    for group in groups:
        view = View.of(msgs, group)
        claims = label_claims(view)
        spent = sum(float(np.asarray(m.payload["epsilon"])) for m in view.received
                    if m.kind == "answer")
        idx = np.array([index.get(np.asarray(x, dtype=np.float64).tobytes(), -1)
                        for x in claims.x], dtype=np.int64)
        known = idx >= 0
        targets = truth_y[idx[known]]
        right = claims.label[known] == targets
        hits = int(np.sum(right))
        repeated = int(np.sum(claims.answers > 1))
        majority, base_name = _majority_label(ctx, truth_y)
        # no ε conversion here: one run sees one dataset, and the match rate is set by
        # the regions' count margins, not by ε (module docstring); `ppknn audit` gives ε
        rows.append(paired_rate_baseline(proportion_row(
            successes=hits, trials=int(known.sum()), protocol=ctx.protocol,
            observer=observer_name(group), target="training data (noiseless labels)",
            attack=adv.attack, quantity="labels inferred correctly",
            note=f"ε spent on these answers {spent:.4g} (ledger); {repeated} instances "
                 "answered more than once (majority vote); an aggregate label has no ε "
                 "bound: empirical ε by `ppknn audit`"),
            hits=right, base=targets == majority, name=base_name))
    return rows


def _majority_label(ctx: Context, noiseless: np.ndarray) -> tuple[int, str]:
    """The label an analyst without the answers claims: the training data's majority class.

    A truth saved without the class counts falls back on the most frequent noiseless
    label of the run (an oracle constant, at least as strong).
    """
    counts = ctx.truth.get("train_class_counts")
    if counts is not None and np.asarray(counts).size:
        return (int(np.argmax(np.asarray(counts))),
                "the training data's majority label for every instance (no transcript)")
    values, n = np.unique(np.asarray(noiseless), return_counts=True)
    return (int(values[int(np.argmax(n))]) if values.size else -1,
            "the most frequent noiseless label for every instance (an oracle constant; no "
            "transcript)")


@register(DP_KNN, "owner-sees-queries", default=True, by_design=True,
          description="the DP owner reads the analysts' test instances in the clear")
def _dp_knn_owner(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "queries" not in ctx.truth:
        return []
    owner = ctx.public["owner"]
    truth = {np.asarray(r, dtype=np.float64).tobytes() for r in np.asarray(ctx.truth["queries"])}
    view = ctx.view(tuple(adv.observers or (owner,)))
    rows = []
    for analyst in ctx.public["analysts"]:
        seen = {np.asarray(r, dtype=np.float64).tobytes()
                for m in view.received if m.sender == analyst and "x" in m.payload
                for r in np.asarray(m.payload["x"])}
        if not seen:
            continue
        # distinct instances on both sides: a dataset with repeated rows (iris) counted a
        # repeated test row once per copy against the distinct rows seen (100 of 98)
        hits = len(seen & truth)
        rows.append(_nothing_seen(proportion_row(
            successes=hits, trials=len(seen), protocol=ctx.protocol,
            observer=observer_name(adv.observers or (owner,)), target=analyst,
            attack=adv.attack, quantity="analyst's instances seen exactly",
            note="the paper's model: test instances are not private from the owner; no "
                 "bound")))
    return rows


def rows_carried(messages: Sequence[Any], rows: np.ndarray) -> np.ndarray:
    """Which of ``rows`` appear exactly as a row of some float payload array of ``messages``.

    Every floating-point payload array whose last axis has the rows' width is
    read as rows of that width; a party's private rows sent in any field are
    found, whatever the field is called. Returns a mask over ``rows``.
    """
    r = np.asarray(rows, dtype=np.float64)
    found = np.zeros(len(r), dtype=bool)
    if r.ndim != 2 or not len(r):
        return found
    index: dict[bytes, list[int]] = {}
    for i, row in enumerate(r):
        index.setdefault(row.tobytes(), []).append(i)
    for m in messages:
        for value in m.payload.values():
            a = np.asarray(value)
            if a.ndim == 0 or a.shape[-1] != r.shape[1] or not np.issubdtype(a.dtype,
                                                                            np.floating):
                continue
            for row in a.reshape(-1, r.shape[1]).astype(np.float64):
                for i in index.get(row.tobytes(), ()):
                    found[i] = True
    return found


# -- dp-nb -------------------------------------------------------------------------------
DP_NB = "dp-nb"


@register(DP_NB, "model-membership-inference", default=True,
          description="an analyst tests membership of candidate rows on its model(s)")
def _dp_nb_mi(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dp_nb.adversary import released_models

    if "members_X" not in ctx.truth:
        return []
    groups = _analyst_groups(ctx, adv)
    msgs = ctx.messages()
    rows = []
    for group in groups:
        models = released_models(View.of(msgs, group))
        eps = [float(np.asarray(m["epsilon"])) for m in models]
        deltas = [float(np.asarray(m.get("delta", 0.0))) for m in models]
        # a model charged ε = 0 is a non-private release (method "non-private"): it
        # promises nothing, so it is not "within" an ε of 0
        private = bool(models) and all(math.isfinite(e) and e > 0 for e in eps)
        claimed = float(sum(eps)) if private else None
        delta = min(1.0, float(sum(deltas))) if private else 0.0
        name = (f"ε of the {len(models)} model(s) received (summed)" if private else
                "none: a model received is non-private (ε = 0 charged)" if models else "")
        rows.append(membership_rows(ctx, adv, observers=group, models=models,
                                    claimed=claimed, bound_name=name, delta=delta))
    return rows


@register(DP_NB, "owner-sees-requests", default=True,
          description="the NB owner reads the analysts' model requests")
def _dp_nb_owner(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    owner = ctx.public["owner"]
    observers = tuple(adv.observers or (owner,))
    view = ctx.view(observers)
    private = np.asarray(ctx.truth.get("others_X", np.zeros((0, 0))), dtype=np.float64)
    rows = []
    for analyst in ctx.public["analysts"]:
        requests = [m for m in view.received if m.sender == analyst]
        if requests:
            # measured, not asserted: a request carrying any of the query rows (the
            # analysts' private instances) in any field counts
            carrying = sum(bool(rows_carried([m], private).any()) for m in requests)
            rows.append(_nothing_seen(proportion_row(
                successes=carrying, trials=len(requests), protocol=ctx.protocol,
                observer=observer_name(observers), target=analyst, attack=adv.attack,
                quantity="requests carrying the analyst's private data",
                note="a request carrying a query row (any field) counts; an honest request "
                     "names public parameters only (method, ε, noise); no bound")))
    return rows


# -- pca-perturbation --------------------------------------------------------------------
PCA = "pca-perturbation"


def _pca_release(ctx: Context) -> Any:
    from ppknn.protocols.pca_perturbation.attacks import release_message

    view = ctx.view(["miner"])
    rounds = sorted({m.round for m in view.received if m.kind.startswith("release:")})
    return release_message(view, rounds[-1]) if rounds else None


@register(PCA, "transform-attack", default=True, params=("reach",),
          description="the miner reverses the released transform, per record")
def _pca_transform(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.pca_perturbation.attacks import reconstruct
    from ppknn.protocols.pca_perturbation.privacy import rho2_bound

    release = _pca_release(ctx)
    if release is None or "records" not in ctx.truth:
        return []
    truth = np.asarray(ctx.truth["records"])
    estimate = reconstruct(release)
    reach = float(adv.params.get("reach", 0.05))
    if not 0 < reach < 0.5:
        raise ConfigError(f"adversary transform-attack: reach = {reach!r}; allowed: 0 < reach "
                          "< 0.5 (a fraction of the normalised range)")
    rmse = np.sqrt(np.mean((estimate - truth) ** 2, axis=1))
    observer = observer_name(adv.observers or ("miner",))
    base = dict(protocol=ctx.protocol, observer=observer, target="sanitizer (each record)",
                attack=adv.attack)
    own = _pca_own(ctx, release)
    rmse_row = mean_row(values=rmse, quantity="reconstruction RMS error per record "
                        "(normalised)", note="mean over records; no bound", **base)
    if own is not None:
        from ppknn.protocols.pca_perturbation.attacks import prior_guess

        prior_rmse = np.sqrt(np.mean((prior_guess(own)[None, :] - truth) ** 2, axis=1))
        prior = mean_row(values=prior_rmse, quantity="", **base)
        rmse_row = with_baseline(
            rmse_row, name=f"each value guessed as its column's mean over the miner's own "
                           f"{len(own)} rows (no release); advantage = baseline error - error",
            baseline=(prior.value, prior.ci_low, prior.ci_high),
            advantage=paired_mean_difference(prior_rmse, rmse))
    rows = [rmse_row]
    within = np.abs(estimate - truth) <= reach
    amp = np.asarray(release.payload.get("amplification", []), dtype=np.float64)
    bound = None
    name = ""
    if amp.size and np.all(np.isfinite(amp)):
        from ppknn.protocols.pca_perturbation.attacks import scheme_of

        # a value of the "laplace" scheme is noised alone (γ of its column); through PCA
        # one attribute enters every released column, so γ is their product
        joint = scheme_of(release) != "laplace"
        gamma = float(np.prod(amp)) if joint else float(np.max(amp))
        bound = rho2_bound(gamma, 2 * reach) if math.isfinite(gamma) else 1.0
        name = (f"ρ1→ρ2 bound, ρ1 = {2 * reach:g}, γ = {gamma:.4g} "
                + ("(product over the released columns)" if joint else "(e^(1/b) per column)"))
    # a record's values share its noise (through PCA every released column feeds every
    # value): records, not values, are the independent trials of the interval
    row = clustered_proportion_row(
        hits=within,
        quantity=f"values reconstructed within ±{reach:g} of the range", bound=bound,
        bound_name=name,
        note="γ-amplification bounds the posterior of any interval of width 2·reach, so "
             "the expected hit rate is <= ρ2 when every such interval has prior <= ρ1 "
             "(a uniform prior on each normalised value; real priors differ)", **base)
    if own is not None:
        from ppknn.protocols.pca_perturbation.attacks import prior_guess

        guess = np.abs(prior_guess(own, reach=reach)[None, :] - truth) <= reach
        prior = clustered_proportion_row(hits=guess, quantity="", **base)
        # records are the independent units: the per-record difference of hit rates
        row = with_baseline(
            row, name=f"each value guessed from the miner's own {len(own)} rows alone: per "
                      f"column the value whose ±{reach:g} window holds most of them",
            baseline=(prior.value, prior.ci_low, prior.ci_high),
            advantage=paired_mean_difference(within.mean(axis=1), guess.mean(axis=1)))
    rows.append(row)
    return rows


def _pca_own(ctx: Context, release: Any) -> np.ndarray | None:
    """The miner's own rows, normalised as the release's public bounds say (if known)."""
    if "instances" not in ctx.truth or "lower" not in release.payload:
        return None
    from ppknn.protocols.pca_perturbation.attacks import own_rows

    own = own_rows(release, np.asarray(ctx.truth["instances"], dtype=np.float64))
    return own if len(own) else None


@register(PCA, "sanitizer-sees-instances", default=True,
          description="the sanitizer looks for the miner's instances in what it received")
def _pca_sanitizer(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "instances" not in ctx.truth:
        return []
    instances = np.asarray(ctx.truth["instances"], dtype=np.float64)
    observers = tuple(adv.observers or ("sanitizer",))
    received = ctx.view(observers).received
    seen = rows_carried(received, instances)
    return [paired_rate_baseline(proportion_row(
        successes=int(seen.sum()), trials=len(instances), protocol=ctx.protocol,
        observer=observer_name(observers), target="miner (its instances)", attack=adv.attack,
        quantity="miner's instances seen exactly",
        note=f"the sanitizer received {len(received)} message(s): the release is one-way, it "
             "learns nothing of the miner's instances (an instance in any received field "
             "counts); no bound"), hits=seen, base=np.zeros(len(seen), dtype=bool),
        name=NOTHING_SEEN)]


@register(PCA, "correlation-attack", default=True,
          description="PCA filtering with the attacker's best s2 (oracle)")
def _pca_correlation(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.pca_perturbation.attacks import attack

    release = _pca_release(ctx)
    if release is None or "records" not in ctx.truth:
        return []
    truth = np.asarray(ctx.truth["records"])
    outcome = attack(release, truth)
    value = outcome.filtered if outcome.best_s2 else outcome.no_filter
    row = LeakageRow(
        protocol=ctx.protocol, observer=observer_name(adv.observers or ("miner",)),
        target="sanitizer (all records)", attack=adv.attack,
        quantity="average privacy (95% interval width / range; lower leaks more)",
        value=float(value), ci_low=float("nan"), ci_high=float("nan"),
        trials=int(len(ctx.truth["records"])),
        note=(f"s2 = {outcome.best_s2} (oracle); transform attack alone "
              f"{outcome.no_filter:.4f}") if outcome.best_s2 else
             "no s2 applies: transform attack alone")
    own = _pca_own(ctx, release)
    if own is None:
        return [row]
    from ppknn.protocols.pca_perturbation.attacks import prior_guess
    from ppknn.protocols.pca_perturbation.privacy import average_privacy

    prior = average_privacy(np.broadcast_to(prior_guess(own), truth.shape), truth)
    return [with_baseline(
        row, name="each value guessed as its column's mean over the miner's own rows (no "
                  "release; no interval); advantage = baseline privacy - privacy",
        baseline=(prior, math.nan, math.nan),
        advantage=(prior - float(value), math.nan, math.nan))]


# -- dptt --------------------------------------------------------------------------------
DPTT = "dptt"


@register(DPTT, "server-side-inference", default=True,
          description="the server claims the side each bit names")
def _dptt_side(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dptt.adversary import side_claims, true_sides

    if "queries" not in ctx.truth:
        return []
    observers = tuple(adv.observers or ("server",))
    if observers == ("server",):  # the default: streamed level by level
        from ppknn.simulations.leakage.stream import dptt_side_inference

        tally = dptt_side_inference(ctx.transcript, np.asarray(ctx.truth["queries"]))
        n, correct, utility = tally.decisions, tally.correct, tally.utility
        right = tally.right
    else:
        claims = side_claims(ctx.view(observers))
        n, utility = int(claims.slot.size), claims.utility
        sides = true_sides(claims, ctx.truth["queries"])
        correct = int(np.sum(claims.right == sides))
        right = int(np.sum(sides))
    if n == 0:
        return []
    base = dict(protocol=ctx.protocol, observer=observer_name(observers),
                target="client (each query)", attack=adv.attack)
    eps = float(ctx.public.get("per_decision_epsilon", float("nan")))
    # without the client's bits: the side most decisions take, named for every decision
    constant = max(right, n - right)
    side_name = ("the better constant side (always right or always left, whichever more "
                 f"decisions take: {constant}/{n}; no transcript)")
    if utility != "cmp":
        return [rate_baseline(proportion_row(
            successes=correct, trials=n, quantity="decisions whose side the server infers",
            note="DIS: ε holds for queries within the privacy radius; no per-decision rate "
                 "bound", **base), successes=constant, trials=n, name=side_name)]
    p = correct / n
    lo, hi = clopper_pearson(correct, n, 0.025)

    def logit(x: float) -> float:
        if x <= 0.5:
            return 0.0
        return math.inf if x >= 1 else math.log(x / (1 - x))

    c_lo, c_hi = clopper_pearson(constant, n, 0.025)
    final = ctx.public.get("final_epsilon_br")
    return [bound_baseline(LeakageRow(
        quantity="empirical ε per decision (side inference)", value=logit(p),
        ci_low=logit(lo), ci_high=logit(hi), trials=n, bound=eps,
        bound_name="per-decision ε of the exponential mechanism",
        note=f"server right on {correct}/{n} decisions; the EM takes the correct side with "
             f"e^(ε/2)/(1+e^(ε/2)), so ε/2 is expected; composed ε per query "
             f"{final if final is None else f'{float(final):.4g}'} (bounded range)", **base),
        baseline=(logit(constant / n), logit(c_lo), logit(c_hi)),
        name=f"{side_name}, as an ε: ln(p / (1 - p))")]


@register(DPTT, "server-location-inference", default=True,
          description="the server estimates each query by the points it released for it")
def _dptt_location(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dptt.adversary import location_estimates

    if "queries" not in ctx.truth:
        return []
    queries = np.asarray(ctx.truth["queries"], dtype=np.float64)
    observers = tuple(adv.observers or ("server",))
    from ppknn.simulations.leakage.stream import iter_messages

    # the estimate reads the last release the observers sent: keep that one message only
    last: Any = None
    for m in iter_messages(ctx.transcript, DPTT, kinds=("release",), with_provenance=False):
        if m.sender in observers and (last is None or (m.round, m.sender, m.receiver, m.seq)
                                      >= (last.round, last.sender, last.receiver, last.seq)):
            last = m
    est, has = location_estimates(View.of([last] if last is not None else [], observers),
                                  len(queries))
    if not has.any():
        return []
    err = np.linalg.norm(est[has] - queries[has], axis=1)
    centre = np.linalg.norm(queries - queries.mean(axis=0), axis=1).mean()
    return [_centroid_baseline(mean_row(
        values=err, protocol=ctx.protocol, observer=observer_name(observers),
        target="client (each query)", attack=adv.attack, quantity="location error distance",
        note=f"the queries' own centroid is {centre:.4g} away on average; composed ε per "
             f"query {ctx.public.get('final_epsilon_br')}; no distance bound"),
        queries=queries[has], err=err)]


def _centroid_baseline(row: LeakageRow, *, queries: np.ndarray, err: np.ndarray
                       ) -> LeakageRow:
    """A location row's baseline: every query guessed as the queries' centroid.

    The centroid of the targets themselves is an oracle constant (at least as good as
    any constant an attacker without the transcript could name); the advantage is the
    baseline's error minus the attack's, per query, with a Student-t interval.
    """
    base = np.linalg.norm(queries - queries.mean(axis=0), axis=1)
    b = mean_row(values=base, quantity="", protocol="", observer="", target="", attack="")
    return with_baseline(row, name="every query guessed as the queries' centroid (an oracle "
                                   "constant; no transcript); advantage = baseline error - "
                                   "error",
                         baseline=(b.value, b.ci_low, b.ci_high),
                         advantage=paired_mean_difference(base, err))


@register(DPTT, "geo-server-location-inference", default=True,
          description="the GEO baseline's server estimates each query by its noisy copies")
def _dptt_geo_location(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "geo/point" not in ctx.truth or "queries" not in ctx.truth:
        return []  # no GEO baseline in this run
    queries = np.asarray(ctx.truth["queries"], dtype=np.float64)
    slot = np.asarray(ctx.truth["geo/slot"], dtype=np.int64)
    point = np.asarray(ctx.truth["geo/point"], dtype=np.float64).reshape(len(slot), -1)
    eps, radius = float(ctx.truth["geo/epsilon"]), float(ctx.truth["geo/radius"])
    count = np.bincount(slot, minlength=len(queries)).astype(np.float64)
    sums = np.zeros((len(queries), point.shape[1]))
    np.add.at(sums, slot, point)
    has = count > 0
    est = sums[has] / count[has, None]
    err = np.linalg.norm(est - queries[has], axis=1)
    dims = point.shape[1]
    expected = (2.0 if dims == 2 else 1.0) * radius / eps  # E|noise| of one draw
    return [_centroid_baseline(mean_row(values=err, protocol=ctx.protocol,
                                        observer="GEO server",
                     target="client (each query)", attack=adv.attack,
                     quantity="location error distance (GEO baseline)",
                     note=f"GEO at ε* = {eps:.4g} within r = {radius:.4g} ({dims}-D "
                          f"{'planar ' if dims == 2 else ''}Laplace); one draw's expected "
                          f"error {expected:.4g}; {int(count.max())} noisy copies per query "
                          "at most (the thesis's fairness rule), averaged; the view is "
                          "saved with the ground truth (GEO runs outside the runtime); no "
                          "distance bound"), queries=queries[has], err=err)]


@register(DPTT, "client-sees-training-points", default=True, by_design=True,
          description="the client receives the server's released points")
def _dptt_client(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.simulations.leakage.stream import iter_messages

    observers = tuple(adv.observers or ("client",))
    n = int(ctx.public["training_rows"])
    seen = np.zeros(n, dtype=bool)  # one flag per training point, not a set of ids
    for m in iter_messages(ctx.transcript, DPTT, kinds=("nodes", "release"),
                           with_provenance=False):  # one message at a time, order-free
        if m.receiver not in observers:
            continue
        for key in ("ids", "parent_id", "left_id", "right_id"):
            if key in m.payload:
                seen[np.asarray(m.payload[key], dtype=np.int64)] = True
    return [paired_rate_baseline(proportion_row(
        successes=int(seen.sum()), trials=n, protocol=ctx.protocol,
        observer=observer_name(observers), target="server (training points)",
        attack=adv.attack, quantity="training points seen exactly",
        note="node values and released points are sent in the clear by design (the "
             "thesis protects the client's query, not the server's data); no bound"),
        hits=seen, base=np.zeros(n, dtype=bool), name=NOTHING_SEEN)]


__all__ = ["Adversary", "Attack", "Context", "allowed", "defaults", "get", "membership_rows",
           "observer_name", "register", "rows_carried"]
