"""The leakage table: written for every protocol, recomputed identically from the folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ppknn.protocols.ppknn_ring.plugin import attribution
from ppknn.simulations.leakage import recompute
from ppknn.simulations.leakage.table import (
    ABOVE,
    NO_BOUND,
    WITHIN,
    LeakageRow,
    epsilon_from_rates,
    read_table,
    rows_equal,
    write_table,
)
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ("ppknn-ring", "dp-knn", "dp-nb", "dptt", "pca-perturbation", "ring-nb")


def small(name: str, **changes) -> dict:
    """The protocol's example scenario, made small and in-process."""
    data = tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text())
    data.setdefault("runtime", {}).update(kind="inprocess", channels=False)
    data["runtime"].pop("layout", None)
    data.setdefault("data", {})
    if name == "dptt":
        data["data"]["dataset"] = "synthetic:classification?rows=3000&features=2&classes=2"
        data["data"]["test_fraction"] = 0.05
        data["data"].pop("max_queries", None)
    else:
        data["data"]["max_queries"] = 40
    for section, values in changes.items():
        if isinstance(values, dict) and isinstance(data.get(section), dict):
            data[section].update(values)
        else:
            data[section] = values
    return data


def run_into(folder: Path, scenario: dict):
    result = execute(parse_scenario(scenario), transcript_dir=folder / "transcript")
    write_results(result, folder)
    return result


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("leak")
    with pytest.MonkeyPatch.context() as mp:  # summary.svg is not under test here
        mp.setattr("ppknn.simulations.results.plot_summary", lambda result, path: None)
        return {name: (base / name, run_into(base / name, small(name)))
                for name in PROTOCOLS}


def _observers(result) -> set[str]:
    """Every party that received at least one message."""
    table = result.transcript.table(["receiver"])
    return set(table["receiver"].to_pylist())


@pytest.mark.parametrize("name", PROTOCOLS)
def test_every_protocol_writes_a_row_per_observing_party(folders, name):
    folder, result = folders[name]
    rows = read_table(folder / "leakage.csv")
    assert rows, f"{name}: empty leakage table"
    observers = {m for r in rows for m in str(r["observer"]).split("+")}
    assert _observers(result) <= observers, (name, _observers(result) - observers)
    assert {r["verdict"] for r in rows} <= {WITHIN, ABOVE, NO_BOUND}
    assert (folder / "leakage.svg").stat().st_size > 0
    summary = json.loads((folder / "summary.json").read_text())["leakage"]
    assert summary["rows"] == len(rows)
    assert summary["above_bound"] == 0  # honest runs keep their promises


@pytest.mark.parametrize("name", PROTOCOLS)
def test_leakage_is_recomputed_identically_from_the_folder(folders, name, tmp_path):
    folder, _ = folders[name]
    write_table(recompute(folder), tmp_path / "again.csv")
    assert rows_equal(read_table(folder / "leakage.csv"), read_table(tmp_path / "again.csv"))


def test_ring_successor_rows_agree_with_the_disclosure_table(folders):
    folder, result = folders["ppknn-ring"]
    disclosure = {r["party"]: r for r in read_table(folder / "disclosure.csv")}
    rows = [r for r in read_table(folder / "leakage.csv")
            if r["attack"] == "successor-attribution"]
    assert len(rows) == len(disclosure) == len(result.outcome.plan.public["ring"])
    ring = result.outcome.plan.public["ring"]
    for r in rows:
        d = disclosure[r["target"]]
        assert (r["value"], r["ci_low"], r["ci_high"], r["trials"]) == \
            (d["probability"], d["ci_low"], d["ci_high"], d["trials"])
        assert r["observer"] == ring[(ring.index(r["target"]) + 1) % len(ring)]
    from ppknn.protocols.ppknn_ring.plugin.disclosure import measure_disclosure_whole

    report = measure_disclosure_whole(result.transcript, result.outcome.plan.public)
    assert report == result.outcome.leakage  # today's measure, on the same transcript
    assert [d.probability for d in report.parties] == pytest.approx(
        [disclosure[d.party]["probability"] for d in report.parties], abs=1e-6)


def test_ring_sum_neighbours_recover_every_vote_vector_the_start_nodes_too(folders):
    _, result = folders["ppknn-ring"]
    folder = folders["ppknn-ring"][0]
    start = result.outcome.plan.public["start"]
    rows = [r for r in read_table(folder / "leakage.csv")
            if r["attack"] == "secure-sum-neighbours"]
    assert len(rows) == len(result.outcome.plan.public["ring"])
    for r in rows:
        # every node's two neighbours subtract what they sent and received and get its
        # vector exactly; the start node's get the mask (its successor received it) and
        # the broadcast total, which is as good
        assert r["value"] == 1.0, r["target"]
    (row,) = [r for r in rows if r["target"] == start]
    assert "broadcast total" in row["note"]


@pytest.mark.parametrize("name", ["ppknn-ring", "ring-nb"])
def test_secure_sum_rows_are_the_same_streamed_one_target_at_a_time(folders, name, tmp_path):
    from ppknn.simulations.leakage import stream

    folder, _ = folders[name]
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(stream, "STATE_BUDGET", 1)  # one target per pass
        rows = [r for r in recompute(folder) if r.attack == "secure-sum-neighbours"]
    finally:
        mp.undo()
    table = [r for r in read_table(folder / "leakage.csv")
             if r["attack"] == "secure-sum-neighbours"]
    write_table(rows, tmp_path / "again.csv")
    assert len(rows) == len(table) > 0
    assert rows_equal(read_table(tmp_path / "again.csv"), table)


def test_shared_sum_hides_vote_vectors_from_the_neighbours(tmp_path):
    result = run_into(tmp_path / "s", small("ppknn-ring", protocol={"secure_sum": "shared"}))
    rows = [r for r in read_table(tmp_path / "s" / "leakage.csv")
            if r["attack"] == "secure-sum-neighbours"]
    assert len(rows) == len(result.outcome.plan.public["ring"])
    assert all(r["value"] == 0 for r in rows)


def test_verdict_and_epsilon_from_rates():
    row = dict(protocol="p", observer="o", target="t", attack="a", quantity="q", trials=10)
    assert LeakageRow(value=2.0, ci_low=1.5, ci_high=3, bound=1.0, **row).verdict == ABOVE
    assert LeakageRow(value=2.0, ci_low=0.9, ci_high=3, bound=1.0, **row).verdict == WITHIN
    assert LeakageRow(value=2.0, ci_low=0.9, ci_high=3, **row).verdict == NO_BOUND
    point, lo, hi = epsilon_from_rates(500, 1000, 500, 1000)
    assert point == 0 and lo == 0 and hi > 0
    point, lo, hi = epsilon_from_rates(990, 1000, 10, 1000)
    assert point == pytest.approx(np.log(99)) and 3.5 < lo < point < hi


def test_streamed_ring_attacks_equal_the_whole_transcript_ones(tmp_path):
    from ppknn.core.leakage import Claims, score_attribution
    from ppknn.core.transcript import View
    from ppknn.protocols.ppknn_ring.plugin.attribution import ring_attribution
    from ppknn.protocols.ppknn_ring.plugin.disclosure import measure_disclosure_whole
    from ppknn.protocols.ppknn_ring.pp_topk_attacks import informed_successor

    data = small("ppknn-ring", protocol={"rounds": 3, "p0": 0.5})
    data["runtime"]["flush_every"] = 3  # many small parts: rounds span several
    result = execute(parse_scenario(data), transcript_dir=tmp_path / "t")
    assert len(result.transcript.parts()) > 5
    public = result.outcome.plan.public
    plain, informed = ring_attribution(result.transcript, public)
    assert plain == measure_disclosure_whole(result.transcript, public)
    # a state budget of one node's vectors: one group per node, the same reports
    assert ring_attribution(result.transcript, public, state_budget=1) == (plain, informed)
    # one-row record batches, comparisons made a message at a time: the same reports
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(attribution, "COMPARE_BUDGET", 1)
        assert ring_attribution(result.transcript, public, state_budget=3) == (plain, informed)
    msgs = result.transcript.messages(with_provenance=True, protocol="pp-topk")
    claims = Claims(informed.adversary)
    for view in View.per_party(msgs, public["ring"]).values():
        claims.items.extend(informed_successor(view, max_distance=public["max_distance"]).items)
    assert informed == score_attribution(claims, msgs, public["party_index"],
                                         public["n_queries"])
    assert sum(d.disclosed for d in informed.parties) > 0


def _count_reads(mp, stream):
    """Count the transcript reads (:func:`stream.batches` calls) made from now on.

    Only reads of the payloads count: reading a small column (the rounds, the
    spill's size estimate) is not a pass over the messages.
    """
    calls = []
    original = stream.batches

    def counted(*args, **kwargs):
        columns = args[2] if len(args) > 2 else kwargs.get("columns")
        if columns is None or "payload" in columns:
            calls.append(args[1])
        return original(*args, **kwargs)

    mp.setattr(stream, "batches", counted)
    return calls


def test_ring_attacks_read_the_transcript_once_however_many_groups(tmp_path, monkeypatch):
    """Groups of nodes cost a spill, not a pass each: the reads do not follow the groups.

    One pass per group (the quadratic scheme) reads the transcript ``groups`` times;
    the scattered one reads it as often as one group does, and its spill files are
    gone afterwards.
    """
    from ppknn.simulations.leakage import attacks, stream
    from ppknn.simulations.leakage.measure import score
    from ppknn.simulations.leakage.truth import truth_of

    data = small("ppknn-ring", parties={"n": 9}, protocol={"rounds": 3})
    data["runtime"]["flush_every"] = 5  # several parts, rounds spanning them
    result = execute(parse_scenario(data), transcript_dir=tmp_path / "t")
    public = result.outcome.plan.public
    spill_root = tmp_path / "t"  # the spill goes beside the transcript's parts
    spilled = []
    monkeypatch.setattr(stream._Spill, "flush", lambda self, f=stream._Spill.flush: (
        spilled.extend(self.pending), f(self)))

    attribution._ATTRIBUTION.clear()  # the run remembered its own: compute it again
    reads = _count_reads(monkeypatch, stream)
    whole = attribution.ring_attribution(result.transcript, public)
    one_group = list(reads)
    assert len(one_group) == 4  # the final vectors, then each of 3 rounds
    assert spilled == []  # everything fits: read straight from the transcript
    reads.clear()
    per_node = attribution.ring_attribution(result.transcript, public, state_budget=1)
    assert per_node == whole
    assert len(set(spilled)) == 9  # nine groups of one node, each given its messages
    assert reads == one_group, "a group of nodes must not cost a pass over the transcript"
    assert not list(spill_root.glob(".scatter-*"))

    # the counter sees the quadratic scheme: one pass over the rounds per group
    def per_group_passes(transcript, protocol, groups, groups_of, *, kinds=(), **_):
        for g in range(groups):
            yield g, (m for r in stream.rounds_of(transcript, protocol)
                      for m in stream.iter_messages(transcript, protocol, round=r, kinds=kinds)
                      if g in groups_of(m.sender, m.receiver, m.kind))

    with monkeypatch.context() as mp:
        mp.setattr(stream, "scatter", per_group_passes)
        reads.clear()
        assert attribution.ring_attribution(result.transcript, public, state_budget=2) == whole
        assert len(reads) > 4 * len(one_group)

    # the secure-sum neighbours, one target per group: also one read
    truth = truth_of(result.outcome, result.prepared.data)
    adv = attacks.Adversary("ppknn-ring", "secure-sum-neighbours")
    jsonable = json.loads(json.dumps(dict(public), default=float))
    reads.clear()
    rows = score("ppknn-ring", result.transcript, jsonable, truth, [adv])
    one_group = list(reads)
    monkeypatch.setattr(stream, "STATE_BUDGET", 1)
    reads.clear()
    again = score("ppknn-ring", result.transcript, jsonable, truth, [adv])
    assert [r.as_dict() for r in again] == [r.as_dict() for r in rows] and len(rows) == 9
    assert reads == one_group
    assert not list(spill_root.glob(".scatter-*"))


def test_ring_attribution_is_computed_once_per_run(tmp_path, monkeypatch):
    """The run's disclosure and its leakage table's two successor attacks share one pass."""

    calls = []
    original = attribution._ring_attribution
    monkeypatch.setattr(attribution, "_ring_attribution",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    run_into(tmp_path / "r", small("ppknn-ring", parties={"n": 5}))
    assert len(calls) == 1
    rows = read_table(tmp_path / "r" / "leakage.csv")
    assert {r["attack"] for r in rows} >= {"successor-attribution", "informed-successor"}


def test_scripted_coalition_and_pooled_analysts(tmp_path):
    ring = small("ppknn-ring", parties={"n": 5})
    ring["adversary"] = [{"attack": "coalition-attribution",
                          "observers": ["owner-00", "owner-04"]}]
    result = run_into(tmp_path / "r", ring)
    rows = [r for r in read_table(tmp_path / "r" / "leakage.csv")
            if r["attack"] == "coalition-attribution"
            and r["quantity"] == "disclosure probability (coalition)"]
    n = len(result.outcome.plan.public["ring"])
    assert [r["observer"] for r in rows] == ["owner-00+owner-04"] * (n - 2)
    assert {r["target"] for r in rows} == set(result.outcome.plan.public["ring"]) - {
        "owner-00", "owner-04"}
    nb = small("dp-nb", data={"max_queries": 20})
    nb["adversary"] = [{"attack": "model-membership-inference",
                        "observers": ["nb-analyst-00", "nb-analyst-01", "nb-analyst-02"]}]
    run_into(tmp_path / "n", nb)
    (pooled,) = [r for r in read_table(tmp_path / "n" / "leakage.csv")
                 if r["observer"].count("+") == 2]
    assert pooled["bound"] == 3.0  # three models at ε 1, composed
    assert pooled["verdict"] == WITHIN
    write_table(recompute(tmp_path / "n"), tmp_path / "again.csv")
    assert rows_equal(read_table(tmp_path / "n" / "leakage.csv"),
                      read_table(tmp_path / "again.csv"))


@pytest.mark.parametrize(("entry", "message"), [
    ({"attack": "guess"}, "unknown attack 'guess' for protocol 'ppknn-ring'; allowed: "
                          "['coalition-attribution', 'informed-successor', "),
    ({"attack": "coalition-attribution"}, "needs the observing parties"),
    ({"attack": "successor-attribution", "params": {"x": 1}},
     "unknown parameter(s) ['x'] for attack 'successor-attribution'; allowed: []"),
    ({"attack": "successor-attribution", "protocol": "dptt"},
     "adversary[0].protocol = 'dptt': not a protocol of this scenario"),
])
def test_bad_adversaries_are_refused_by_the_scenario(entry, message):
    from ppknn.core.errors import ConfigError

    data = small("ppknn-ring")
    data["adversary"] = [entry]
    with pytest.raises(ConfigError) as err:
        parse_scenario(data)
    assert message in str(err.value)


def test_each_plugin_declares_the_attacks_a_run_scores():
    from ppknn.simulations import registry
    from ppknn.simulations.leakage import attacks

    for name in registry.names():
        declared = registry.get(name).adversaries
        assert declared, name
        assert set(declared) <= set(attacks.allowed(name)), name
        assert [a.attack for a in attacks.defaults(name)] == list(declared)
        assert {a for a in attacks.allowed(name) if attacks.get(name, a).default} == \
            set(declared), name


def test_bounded_batches_read_every_message_unchanged(folders):
    """A one-byte budget reads one row per batch; the messages equal the whole-table ones."""
    from ppknn.core.messages import decode_arrays, encode_arrays
    from ppknn.core.transcript import Transcript
    from ppknn.simulations.leakage.stream import batches, decode_view, iter_messages

    folder, _ = folders["dptt"]
    t = Transcript(folder / "transcript")
    assert {b.num_rows for b in batches(t, [("protocol", "=", "dptt")], budget=1)} == {1}
    whole = t.messages(with_provenance=True, protocol="dptt")
    streamed = list(iter_messages(t, "dptt", budget=1))

    def key(m):
        return (m.round, m.sender, m.receiver, m.seq)

    assert sorted(map(key, streamed)) == sorted(map(key, whole)) and len(whole) >= 10
    by_key = {key(m): m for m in whole}
    for m in streamed:
        ref = by_key[key(m)]
        assert m.kind == ref.kind and sorted(m.payload) == sorted(ref.payload)
        assert all(np.array_equal(m.payload[k], ref.payload[k]) for k in ref.payload)
        assert all(np.array_equal(m.provenance[k], ref.provenance[k]) for k in ref.provenance)
    blob = encode_arrays({"a": np.arange(6.0).reshape(2, 3), "b": np.array(7, dtype=np.uint8)})
    view, copy = decode_view(blob), decode_arrays(blob)
    assert view.keys() == copy.keys() and all(np.array_equal(view[k], copy[k]) for k in copy)
    assert view["b"].shape == () and not view["a"].flags.writeable


def test_geo_baselines_server_is_scored_and_recomputed(tmp_path):
    """GEO's server: one planar Laplace copy per query (E8), error near 2r/ε*, recomputed."""
    data = small("dptt")
    data["protocol"].update(variant="E8", geo_radius=2.0, geo_epsilon=1.0)
    folder = tmp_path / "geo"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("ppknn.simulations.results.plot_summary", lambda result, path: None)
        run_into(folder, data)
    rows = [r for r in read_table(folder / "leakage.csv")
            if r["attack"] == "geo-server-location-inference"]
    assert len(rows) == 1 and rows[0]["observer"] == "GEO server"
    row = rows[0]
    assert row["ci_low"] <= 2 * 2.0 / 1.0 <= row["ci_high"]  # E|planar Laplace| = 2r/ε*
    assert row["trials"] > 100
    write_table(recompute(folder), tmp_path / "again.csv")
    assert rows_equal(read_table(folder / "leakage.csv"), read_table(tmp_path / "again.csv"))


def test_no_geo_row_without_the_geo_baseline(folders):
    folder, _ = folders["dptt"]
    attacks = {r["attack"] for r in read_table(folder / "leakage.csv")}
    assert "geo-server-location-inference" not in attacks
    assert "server-location-inference" in attacks


def test_spill_estimate_bounds_what_is_written_and_is_close(tmp_path, monkeypatch):
    """The free-space check's estimate is at least the spill written, and not far above."""
    from ppknn.simulations.leakage import stream

    data = small("ppknn-ring", parties={"n": 12}, protocol={"rounds": 3})
    data["runtime"]["flush_every"] = 7
    result = execute(parse_scenario(data), transcript_dir=tmp_path / "t")
    written = []
    flush = stream._Spill.flush

    def counting(self):
        flush(self)
        written.append(sum(p.stat().st_size for p in self.paths if p.exists()))

    monkeypatch.setattr(stream._Spill, "flush", counting)
    attribution._ATTRIBUTION.clear()
    attribution.ring_attribution(result.transcript, result.outcome.plan.public, state_budget=1)
    spill = max(written)
    estimate = stream._spill_estimate(result.transcript, "pp-topk", ("topk-vector",), True)
    assert spill <= estimate <= 1.5 * spill


def test_truth_stacks_per_party_arrays_and_reads_back_the_same(tmp_path):
    """Per-party truth arrays are one archive member (not one per party); both layouts load."""
    from ppknn.simulations.leakage.truth import load_truth, save_truth

    rng = np.random.default_rng(0)
    truth = {f"votes/owner-{i:03d}": rng.integers(0, 9, (4, 3), dtype=np.uint64)
             for i in range(50)}
    truth.update({"queries": rng.random((4, 2)), "geo/slot": np.arange(4),
                  "geo/point": rng.random((4, 2)), "stats/a": np.zeros(2),
                  "stats/b": np.zeros(3)})  # unequal shapes: kept apart
    path = save_truth(truth, tmp_path / "t.npz")
    with np.load(path) as f:
        assert sorted(f.files) == ["geo/point", "geo/slot", "names:votes/", "queries",
                                   "stack:votes/", "stats/a", "stats/b"]
    back = load_truth(path)
    assert back.keys() == truth.keys()
    for k, v in truth.items():
        assert back[k].dtype == v.dtype and np.array_equal(back[k], v), k
    # a file written one member per array (as before) reads back the same
    np.savez_compressed(tmp_path / "old.npz", **truth)
    old = load_truth(tmp_path / "old.npz")
    assert old.keys() == truth.keys() and all(np.array_equal(old[k], truth[k]) for k in truth)


def test_truth_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A failure while the truth is written (a full disk) leaves no file to be read back."""
    from ppknn.simulations.leakage.truth import load_truth, save_truth

    path = tmp_path / "truth-x.npz"
    save_truth({"queries": np.arange(3.0)}, path)
    real = np.lib.format.write_array

    def full(*args, **kwargs):  # the first array is written, then the disk is full
        real(*args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np.lib.format, "write_array", full)
    with pytest.raises(OSError, match="No space"):
        save_truth({"queries": np.arange(5.0), "more": np.zeros(2)}, path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truth-x.npz"]  # no partial left
    assert np.array_equal(load_truth(path)["queries"], np.arange(3.0))  # the old one intact


def test_summary_lists_a_large_table_by_attack_and_its_worst_rows():
    """Past SUMMARY_ROWS rows, summary.json keeps counts, one line per attack and the rows
    above their bound first (the whole table is leakage.csv), not every row."""
    from ppknn.simulations.leakage.table import SUMMARY_ROWS, summary

    def row(i: int, attack: str, value: float, bound: float | None = 0.5) -> LeakageRow:
        return LeakageRow(protocol="p", observer=f"o{i}", target=f"t{i}", attack=attack,
                          quantity="rate", value=value, ci_low=value - 0.01,
                          ci_high=value + 0.01, trials=100, bound=bound)

    rows = [row(i, "a", 0.1 + i / 10_000) for i in range(300)]
    rows += [row(300, "a", 0.9), row(301, "b", float("nan"), None), row(302, "b", 0.3, None)]
    s = summary(rows)
    assert (s["rows"], s["above_bound"], s["no_bound"]) == (303, 1, 2)
    assert not s["table_complete"] and len(s["table"]) == SUMMARY_ROWS
    assert s["table"][0]["observer"] == "o300" and s["table"][0]["verdict"] == ABOVE
    assert [r["observer"] for r in s["table"][1:4]] == ["o302", "o299", "o298"]  # largest next
    by = {b["attack"]: b for b in s["by_attack"]}
    assert by["a"]["rows"] == 301 and by["a"]["above_bound"] == 1
    assert (by["a"]["max"], by["a"]["max_observer"], by["a"]["bound"]) == (0.9, "o300", 0.5)
    assert by["b"]["max"] == 0.3 and by["b"]["bound"] is None and by["b"]["mean"] == 0.3
    small = summary(rows[:10])
    assert small["table_complete"] and [r["observer"] for r in small["table"]] == [
        f"o{i}" for i in range(10)]  # whole, in the table's order
    json.dumps(s, allow_nan=False)  # strict JSON: no NaN anywhere


def test_dp_knn_owner_counts_distinct_instances_when_test_rows_repeat(tmp_path):
    """banknote's test rows repeat (457 rows, 454 distinct): every analyst's instances are
    seen exactly (rate 1), counted once per distinct row (the scorer counted each copy and
    failed: 'need 0 <= successes <= trials')."""
    import warnings

    data = small("dp-knn", data={"dataset": "banknote", "bounds": "data"},
                 parties={"n": 1, "analysts": 1})
    data["data"].pop("max_queries")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bounds from the data: a PrivacyLeakWarning
        result = run_into(tmp_path / "r", data)
    queries = np.asarray(result.prepared.data.queries, dtype=np.float64)
    distinct = len({q.tobytes() for q in queries})
    assert distinct < len(queries)
    rows = [r for r in read_table(tmp_path / "r" / "leakage.csv")
            if r["attack"] == "owner-sees-queries"]
    assert [(r["value"], r["trials"]) for r in rows] == [(1.0, distinct)]


def test_plot_shows_the_strongest_rows_ranked_by_verdict_advantage_then_value():
    """``leakage.svg`` draws at most PLOT_ROWS rows a panel: above-bound rows first, then
    the largest advantage over the no-transcript baseline, then the largest value; rows
    without a baseline after those with one; NaN last; the table's order when all fit."""
    import math
    from dataclasses import replace

    from ppknn.simulations.leakage.table import PLOT_ROWS, LeakageRow, strongest

    base = LeakageRow(protocol="p", observer="a", target="t", attack="x", quantity="q",
                      value=0.5, ci_low=0.4, ci_high=0.6, trials=100)
    rows = [
        replace(base, target="small-adv", advantage=0.01, value=0.9),
        replace(base, target="no-baseline-high", value=0.99),
        replace(base, target="above", bound=0.1, advantage=-0.2, value=0.3),  # ci_low 0.4 > 0.1
        replace(base, target="big-adv", advantage=0.3, value=0.2),
        replace(base, target="nan", value=math.nan, ci_low=math.nan, ci_high=math.nan),
        replace(base, target="no-baseline-low", value=0.1),
    ]
    assert rows[2].verdict == "above bound"
    ranked = [r.target for r in strongest(rows, 5)]
    assert ranked == ["above", "big-adv", "small-adv", "no-baseline-high", "no-baseline-low"]
    assert [r.target for r in strongest(rows, 6)] == [r.target for r in rows]  # all fit
    many = [replace(base, target=f"t{i}", advantage=i / 1000) for i in range(3 * PLOT_ROWS)]
    top = strongest(many, PLOT_ROWS)
    assert [r.target for r in top] == [f"t{i}" for i in range(3 * PLOT_ROWS - 1,
                                                              2 * PLOT_ROWS - 1, -1)]
