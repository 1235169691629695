"""The DP owner's request estimate: public facts only, refused up front, before the ledger."""

from __future__ import annotations

import inspect
import re
from fractions import Fraction

import numpy as np
import pytest

from ppknn.core.errors import BudgetExhausted, ConfigError, RequestTooLarge
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.service import Refused
from ppknn.protocols.dp_knn import cost
from ppknn.protocols.dp_knn.cost import check_request, estimate_request, largest_request
from ppknn.protocols.dp_knn.driver import ask
from ppknn.protocols.dp_knn.parties import analyst_spec, dp_owner_spec
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.protocol import Answer, Query
from tests.dpknn.conftest import IndexSpy, owner_kwargs

ALGORITHMS = [("rn", "proposed"), ("rn", "baseline-laplace"), ("rn", "baseline-exponential"),
              ("knn", "interactive"), ("knn", "noninteractive"), ("knn", "baseline"),
              ("convert", "interactive"), ("convert", "noninteractive")]

# 40 queries of 2 features (the conftest batch), proposed: 8,388,608 fixed + 780 pairs * 64
# + 40 * (1024 + 2 * 16) = 8,480,768 bytes; 8 queries: 8,398,848; 9 queries: 8,400,416
TIGHT = 8_399_000


def test_exact_values_from_the_constants():
    e = estimate_request(3, 2, task="rn", algorithm="proposed", clique_work_limit=1000)
    # 3 pairs * (180 + 2) ns + 3 * 200,000 ns + 1000 units * 12 ns;
    # 8 MiB + 3 pairs * 64 B + 3 * (1024 + 2 * 16) B
    assert (e.pairs, e.nanoseconds, e.bytes) == (3, 612_546, 8_391_968)
    assert e.seconds == 612_546 / 1e9
    e = estimate_request(2, 2, task="knn", algorithm="interactive", clique_work_limit=1000)
    assert (e.pairs, e.nanoseconds) == (1, 182 + 400_000)  # two vertices: no clique search
    e = estimate_request(3, 2, task="knn", algorithm="baseline", clique_work_limit=1000)
    assert (e.pairs, e.nanoseconds, e.bytes) == (0, 600_000, 8_388_608 + 3 * 1056)
    e = estimate_request(10_000, 5, task="rn", algorithm="proposed")  # the documented figure
    assert e.nanoseconds == 49_995_000 * 185 + 10_000 * 200_000 + 750_000_000 * 12
    assert e.bytes == 8_388_608 + 49_995_000 * 64 + 10_000 * 1104
    assert {type(e.nanoseconds), type(e.bytes)} == {int}  # integers: the same everywhere


@pytest.mark.parametrize(("task", "algorithm"), ALGORITHMS)
def test_monotonic_in_n_and_d(task, algorithm):
    rng = np.random.default_rng(11)
    ns = np.unique(np.concatenate([np.arange(0, 50), rng.integers(50, 10**7, 200)]))
    for d in (1, 5, 300):
        es = [estimate_request(int(n), d, task=task, algorithm=algorithm) for n in ns]
        assert all(a.nanoseconds < b.nanoseconds and a.bytes < b.bytes
                   for a, b in zip(es, es[1:]))
    wide = estimate_request(1000, 50, task=task, algorithm=algorithm)
    narrow = estimate_request(1000, 5, task=task, algorithm=algorithm)
    assert wide.nanoseconds >= narrow.nanoseconds and wide.bytes > narrow.bytes


def test_the_estimate_reads_public_facts_only():
    params = set(inspect.signature(estimate_request).parameters)
    assert params == {"n", "d", "task", "algorithm", "clique_work_limit"}


def _most(message: str) -> int:
    return int(re.search(r"at most ([\d,]+) queries", message).group(1).replace(",", ""))


@pytest.mark.parametrize("limits", [dict(time_limit_s=600.0, memory_limit_bytes=None),
                                    dict(time_limit_s=None, memory_limit_bytes=2**30),
                                    dict(time_limit_s=30.0, memory_limit_bytes=8 * 2**30),
                                    dict(time_limit_s=0.5, memory_limit_bytes=None)])
@pytest.mark.parametrize(("task", "algorithm", "d"), [("rn", "proposed", 5),
                                                      ("knn", "interactive", 300),
                                                      ("knn", "baseline", 8)])
def test_the_largest_batch_named_fits_and_one_more_does_not(limits, task, algorithm, d):
    with pytest.raises(RequestTooLarge) as info:
        check_request(10**8, d, task=task, algorithm=algorithm, what="request 3", **limits)
    text = str(info.value)
    most = _most(text)
    assert most == largest_request(d, task=task, algorithm=algorithm, **limits) > 0
    assert text.startswith(f"request 3 of 100,000,000 queries ({d} features, {task}:"
                           f"{algorithm}): estimated ")
    assert "worst case: every pair of query regions overlaps" in text
    assert check_request(most, d, task=task, algorithm=algorithm, **limits).n == most
    with pytest.raises(RequestTooLarge):
        check_request(most + 1, d, task=task, algorithm=algorithm, **limits)


def test_the_default_limits_and_the_documented_figures():
    assert (cost.DEFAULT_REQUEST_TIME_LIMIT_S, cost.DEFAULT_REQUEST_MEMORY_LIMIT_BYTES) == (
        600.0, 8 * 2**30)
    proposed = dict(task="rn", algorithm="proposed")
    assert largest_request(5, **proposed, time_limit_s=600.0,
                           memory_limit_bytes=8 * 2**30) == 16_359
    assert largest_request(5, **proposed, time_limit_s=600.0, memory_limit_bytes=None) == 78_859
    assert largest_request(5, **proposed, time_limit_s=None, memory_limit_bytes=None) is None
    check_request(10_000, 5, **proposed)  # the measured 10,000-query batch is accepted
    with pytest.raises(RequestTooLarge, match=r"over request_memory_limit_bytes = 8589934592 "
                       r"\(8\.6 GB\); split it into requests of at most 16,359 queries"):
        check_request(16_360, 5, **proposed)
    with pytest.raises(RequestTooLarge, match=r"200,000 queries .*over request_time_limit_s = "
                       r"600 and request_memory_limit_bytes"):
        check_request(200_000, 5, **proposed)
    # no batch fits when the clique budget alone is over the time limit
    with pytest.raises(RequestTooLarge, match="at most 2 queries"):
        check_request(3, 5, **proposed, time_limit_s=1.0, memory_limit_bytes=None)


def test_none_disables_the_limits():
    e = check_request(10**7, 5, task="rn", algorithm="proposed", time_limit_s=None,
                      memory_limit_bytes=None)
    assert e.bytes > 10**15  # far past any machine, and not refused
    owner = DPOwner(**owner_kwargs(request_time_limit_s=None, request_memory_limit_bytes=None))
    assert (owner.request_time_limit_s, owner.request_memory_limit_bytes) == (None, None)


@pytest.mark.parametrize("query", [dict(task="rn", algorithm="proposed", radius=0.2),
                                   dict(task="knn", algorithm="interactive", k=5)])
def test_refused_before_the_ledger_and_the_id_stays_free(make_owner, queries, query):
    owner = make_owner(epsilon=1.0, request_memory_limit_bytes=TIGHT)
    spy = owner._index = IndexSpy(owner._index)
    q = Query(x=queries, epsilon=0.5, **query)
    request = q.to_message(run_id="run", sender="alice", receiver="owner", request=0)
    with pytest.raises(RequestTooLarge, match=r"^request 0 of 40 queries \(2 features, .*"
                       r"8\.5 MB .*over request_memory_limit_bytes = 8399000 \(8\.4 MB\); split "
                       r"it into requests of at most 8 queries"):
        owner.answer(request)
    assert spy.calls == [] and len(owner.ledger.entries) == 0
    assert owner.remaining("alice").epsilon == 1.0 and owner.ledger.spent_exact()[0] == 0
    reply = owner.reply(request)  # as the driver calls it: a refusal to the analyst
    assert reply.kind == "refused" and reply.receiver == "alice"
    refused = Analyst(party_id="alice", owner="owner", run_id="run").receive(reply)
    assert isinstance(refused, Refused) and "at most 8 queries" in refused.reason
    assert isinstance(RequestTooLarge("x"), BudgetExhausted)
    # the same request id is still free: the owner with the limit raised answers it
    owner.request_memory_limit_bytes = None
    answer = Answer.from_message(owner.answer(request))
    assert answer.request == 0 and answer.epsilon == 0.5 and spy.calls
    assert owner.ledger.spent_exact()[0] == Fraction(1, 2)
    # a batch that fits is answered as before (the labels of an owner without limits)
    small = Query(x=queries[:8], epsilon=0.25, **query)
    a = make_owner(epsilon=1.0, request_memory_limit_bytes=TIGHT)
    b = make_owner(epsilon=1.0, request_memory_limit_bytes=None, request_time_limit_s=None)
    ra, rb = (Answer.from_message(o.answer(small.to_message(run_id="run", sender="alice",
                                                             receiver="owner", request=1)))
              for o in (a, b))
    np.testing.assert_array_equal(ra.labels, rb.labels)


def test_the_decision_does_not_depend_on_the_training_data(queries):
    """An owner of 20 rows and one of 3,000 refuse with the same words (|D| is private)."""
    texts = []
    for n, seed in ((20, 1), (3000, 2)):
        owner = DPOwner(**owner_kwargs(n=n, seed=seed, request_memory_limit_bytes=TIGHT))
        q = Query(task="rn", algorithm="proposed", x=queries, radius=0.05, epsilon=0.5)
        with pytest.raises(RequestTooLarge) as info:
            owner.answer(q.to_message(run_id="run", sender="bob", receiver="owner", request=7))
        texts.append(str(info.value))
    assert texts[0] == texts[1]


def test_the_analyst_sees_the_refusal_through_the_runtime(tmp_path, queries):
    rt = make_runtime("inprocess")
    kw = {k: v for k, v in owner_kwargs(request_memory_limit_bytes=TIGHT).items()
          if k != "party_id"}
    rt.start([dp_owner_spec(party_id="owner", **kw),
              analyst_spec(party_id="alice", owner="owner", run_id="run")],
             RunContext(run_id="run", transcript_dir=tmp_path / "t", secure_channels=True))
    try:
        big = Query(task="rn", algorithm="proposed", x=queries, radius=0.1, epsilon=0.25)
        small = Query(task="rn", algorithm="proposed", x=queries[:8], radius=0.1, epsilon=0.25)
        got = ask(rt, [("alice", "owner", big), ("alice", "owner", small)], refusals="return")
        with pytest.raises(BudgetExhausted, match="at most 8 queries"):
            ask(rt, [("alice", "owner", big)], first_round=3)
    finally:
        rt.shutdown()
    assert isinstance(got[0], Refused) and "request 0 of 40 queries" in got[0].reason
    assert isinstance(got[1], Answer) and got[1].epsilon == 0.25


@pytest.mark.parametrize(("key", "value"), [
    ("request_time_limit_s", 0), ("request_time_limit_s", -1.0),
    ("request_time_limit_s", float("nan")), ("request_time_limit_s", float("inf")),
    ("request_time_limit_s", "600"), ("request_time_limit_s", True),
    ("request_memory_limit_bytes", 0), ("request_memory_limit_bytes", 1.5e9),
    ("request_memory_limit_bytes", True), ("request_memory_limit_bytes", "8GB")])
def test_bad_limits_are_config_errors_naming_the_value(key, value):
    with pytest.raises(ConfigError, match=rf"^{key} = {re.escape(repr(value))}; allowed: "):
        DPOwner(**owner_kwargs(**{key: value}))


def test_bad_estimate_arguments_are_config_errors():
    with pytest.raises(ConfigError, match=r"n = -1; allowed: an integer >= 0"):
        estimate_request(-1, 2, task="rn", algorithm="proposed")
    with pytest.raises(ConfigError, match=r"d = 0; allowed: an integer >= 1"):
        estimate_request(5, 0, task="rn", algorithm="proposed")
    with pytest.raises(ConfigError, match=r"clique_work_limit = 1.5"):
        estimate_request(5, 2, task="rn", algorithm="proposed", clique_work_limit=1.5)


# -- the scenario path: refused up front, before any party starts ------------------------------

def _raw(**protocol) -> dict:
    from pathlib import Path

    from ppknn.simulations.scenario import tomllib

    path = Path(__file__).resolve().parents[2] / "scenarios" / "dp-knn.toml"
    data = tomllib.loads(path.read_text())
    data["runtime"]["kind"] = "inprocess"
    data["protocol"].update(protocol)
    return data


# scenarios/dp-knn.toml: 400 queries of 5 features among 8 analysts, one batch each: the
# largest request is 50 queries, 8,388,608 + 1,225 * 64 + 50 * 1104 = 8,522,208 bytes; under
# 8,500,000 bytes at most 44 (8,497,728 bytes; 45: 8,501,648)
@pytest.mark.parametrize(("protocol", "message"), [
    (dict(request_memory_limit_bytes=8_500_000),
     r"^protocol\.request_memory_limit_bytes = 8500000: the DP owner would refuse every request "
     r"this large: the largest request of 50 queries \(5 features, rn:proposed\): estimated "
     r"9\.01 s and 8\.5 MB .*split it into requests of at most 44 queries .*raise "
     r"protocol\.batches"),
    (dict(request_time_limit_s=6.0),
     r"^protocol\.request_time_limit_s = 6\.0: .*50 queries .*at most 2 queries"),
    (dict(task="knn", algorithm="baseline", request_time_limit_s=0.005),
     r"^protocol\.request_time_limit_s = 0\.005: .*50 queries \(5 features, knn:baseline\): "
     r"estimated 0\.01 s .*at most 25 queries"),
])
def test_a_scenario_whose_requests_would_be_refused_stops_in_prepare(protocol, message):
    from tests.plugins.equivalence import assert_refused

    assert_refused(_raw(**protocol), "prepare", message)


def test_a_scenario_that_fits_or_has_no_limit_prepares():
    from ppknn.simulations.runner import prepare
    from ppknn.simulations.scenario import parse_scenario

    sc = parse_scenario(_raw(request_memory_limit_bytes=8_522_208), source="test")
    prepare(sc)  # exactly at the limit: accepted
    sc = parse_scenario(_raw(request_memory_limit_bytes=8_500_000, batches=2), source="test")
    prepare(sc)  # 25 queries per request
    sc = parse_scenario(_raw(request_memory_limit_bytes="none", request_time_limit_s="none"),
                        source="test")
    assert (sc.protocol[0].request_memory_limit_bytes, sc.protocol[0].request_time_limit_s) == (
        None, None)
    prepared = prepare(sc)
    owner = prepared.plan.specs[0].kwargs
    assert (owner["request_time_limit_s"], owner["request_memory_limit_bytes"]) == (None, None)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("request_time_limit_s", 0.0, "greater than 0"),
    ("request_time_limit_s", float("inf"), "finite"),
    ("request_time_limit_s", "forever", "valid number"),
    ("request_memory_limit_bytes", 0, "greater than or equal to 1"),
    ("request_memory_limit_bytes", 1.5, "valid integer"),
    ("request_memory_limit_bytes", True, "valid integer")])
def test_bad_limits_in_a_scenario_are_refused_by_the_parser(key, value, message):
    from tests.plugins.equivalence import assert_refused

    assert_refused(_raw(**{key: value}), "parse",
                   rf"protocol\.{key} = {re.escape(repr(value))}: .*{message}")


@pytest.mark.parametrize(("setting", "fragment"), [
    ("protocol.request_memory_limit_bytes=8500000", "at most 44 queries"),
    ("protocol.request_time_limit_s=0", "protocol.request_time_limit_s = 0")])
def test_the_cli_exits_2_in_one_line_writing_nothing(tmp_path, setting, fragment):
    from pathlib import Path

    from typer.testing import CliRunner

    from ppknn.cli import app

    path = Path(__file__).resolve().parents[2] / "scenarios" / "dp-knn.toml"
    result = CliRunner().invoke(app, ["run", str(path), "--output", str(tmp_path / "out"),
                                      "--runtime", "inprocess", "--set", setting])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error:") and "Traceback" not in result.output
    assert fragment in result.output.replace("\n", ""), result.output
    assert list(tmp_path.iterdir()) == []


def test_the_scenario_check_takes_the_largest_request():
    """401 queries among 8 analysts: one request of 51 (8,526,512 bytes), seven of 50."""
    from tests.plugins.equivalence import assert_refused

    data = _raw(request_memory_limit_bytes=8_522_208)  # 50 queries fit exactly, 51 do not
    data["data"]["max_queries"] = 401
    assert_refused(data, "prepare", r"the largest request of 51 queries \(5 features")


@pytest.mark.parametrize("cls", ["DPRadiusNeighborsClassifier", "DPKNeighborsClassifier"])
def test_the_estimators_take_the_limits_and_say_how_to_split(cls):
    import ppknn.estimators as estimators

    rng = np.random.default_rng(4)
    X, queries = rng.random((120, 3)), rng.random((300, 3))
    y = (X[:, 0] > 0.5).astype(int)
    common = {"bounds": (np.zeros(3), np.ones(3)), "utility_folds": 0, "random_state": 2}
    est = getattr(estimators, cls)
    # 300 queries of 3 features: 8,388,608 + 44,850 pairs * 64 + 300 * (1024 + 48) bytes
    limit = 8_388_608 + 44_850 * 64 + 300 * 1072 - 1
    tight = est(request_memory_limit_bytes=limit, **common).fit(X, y)
    with pytest.raises(ConfigError) as raised:
        tight.predict(queries)
    text = str(raised.value)
    assert text.startswith(f"{cls}: request_memory_limit_bytes = {limit}")
    assert "at most 299 queries" in text and "raise n_analysts" in text
    assert "batches" not in text and "max_queries" not in text  # no scenario-only words
    assert tight.privacy_.epsilon == 0  # refused before anything ran or was charged
    assert len(tight.predict(queries[:299])) == 299
    free = est(request_memory_limit_bytes=None, **common).fit(X, y)
    default = est(**common).fit(X, y)
    np.testing.assert_array_equal(free.predict(queries), default.predict(queries))
    with pytest.raises(ConfigError, match=rf"^{cls}: request_time_limit_s = 0;"):
        est(request_time_limit_s=0, **common).fit(X, y)


def test_concurrent_requests_are_admitted_within_the_memory_limit(queries):
    """Two requests that fit alone but not together run one after the other, with the
    answers they get alone; with room for both they overlap."""
    import threading

    one = estimate_request(40, 2, task="rn", algorithm="proposed").bytes

    def serve(limit):
        owner = DPOwner(**owner_kwargs(epsilon=10.0, request_memory_limit_bytes=limit))
        inside, both = [], threading.Event()
        compute = owner._compute

        def slow(*args, **kwargs):  # hold the first request until the second is in, or 1 s
            inside.append(1)
            if len(inside) == 2:
                both.set()
            both.wait(timeout=1.0)
            return compute(*args, **kwargs)

        owner._compute = slow
        q = Query(task="rn", algorithm="proposed", x=queries, radius=0.2, epsilon=0.5)
        got = {}

        def ask_one(who, rid):
            got[who] = Answer.from_message(owner.answer(q.to_message(
                run_id="run", sender=who, receiver="owner", request=rid)))

        threads = [threading.Thread(target=ask_one, args=(w, i)) for i, w in
                   enumerate(("alice", "bob"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return owner, got

    tight, tight_got = serve(2 * one - 1)
    roomy, roomy_got = serve(2 * one)
    assert tight._memory.peak == one and not tight._memory.reserved  # one at a time
    assert roomy._memory.peak == 2 * one and roomy.peak_concurrency == 2  # together
    for who in ("alice", "bob"):
        np.testing.assert_array_equal(tight_got[who].labels, roomy_got[who].labels)


def test_the_gate_lets_a_lone_request_in_and_none_admits_all():
    gate = cost.MemoryGate(10)
    with gate.admitted(50):  # one request alone: its own check was against the limit
        assert gate.reserved == 50
    unlimited = cost.MemoryGate(None)
    with unlimited.admitted(10**15), unlimited.admitted(10**15):
        assert unlimited.reserved == 2 * 10**15
    assert (gate.reserved, unlimited.reserved) == (0, 0)
