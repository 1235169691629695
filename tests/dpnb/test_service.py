"""The NB owner's model-release service: ledger, refusals, messages, runtimes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ppknn.core.errors import BudgetExhausted, ConfigError, ProtocolError
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.service import Refused
from ppknn.core.transcript import SCHEMA as TRANSCRIPT_SCHEMA
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_nb.driver import ask
from ppknn.protocols.dp_nb.parties import nb_owner_spec, nb_requester_spec
from ppknn.protocols.dp_nb.parties.nb_owner import NBOwner, NBRequester
from ppknn.protocols.dp_nb.protocol import ModelRequest
from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.training import NBConfig, train

RNG = np.random.default_rng(0)
Y = RNG.integers(0, 2, 400)
X = np.column_stack([np.clip(RNG.normal(3 + 3 * Y, 1.0), 0, 10), (Y + RNG.integers(0, 2, 400)) % 3])
SCHEMA = dict(bounds=([0.0], [10.0]), categories={1: [0, 1, 2]})
CLASSES = ["no", "yes"]
SCHEMA_COLUMNS = [f.name for f in TRANSCRIPT_SCHEMA]
LABELS = np.asarray(CLASSES)[Y]


def _owner(**kw):
    return NBOwner(party_id="owner", X=X, y=LABELS, classes=CLASSES, run_id="r", seed=5,
                   **{**SCHEMA, "epsilon": 1.0, **kw})


def _requester(owner, name="alice", index=1):
    return NBRequester(party_id=name, owner="owner", run_id="r", classes=CLASSES,
                       schema=owner.schema, index=index)


def test_released_model_is_algorithm_1_on_the_owners_stream():
    owner = _owner()
    alice = _requester(owner)
    model = alice.receive(owner.train(alice.request(ModelRequest(epsilon=0.6,
                                                                 neighbours="replace"))))
    num, cat = owner.schema.encode(X)
    direct = train(num, cat, Y, n_classes=2, schema=owner.schema,
                   config=NBConfig(epsilon=0.6, neighbours="replace"),
                   rng=SeedPolicy(root=5).generator("dp-nb", "alice", 0))
    for f in ("class_count", "theta", "var"):
        assert np.array_equal(getattr(model.params, f), getattr(direct.params, f))
    assert np.array_equal(model.params.category_count[0], direct.params.category_count[0])
    assert (model.epsilon, model.request) == (0.6, 0)
    assert set(model.predict(X)) <= set(CLASSES)


def test_reply_carries_the_release_and_its_price_only():
    owner = _owner()
    reply = owner.train(_requester(owner).request(ModelRequest(epsilon=0.5)))
    assert set(reply.payload) == {"request", "epsilon", "delta", "class_count", "theta", "var",
                                  "lower", "upper", "density", "category_count_0"}


def test_ledger_per_analyst_and_refusal_before_any_release():
    owner = _owner(analyst_epsilon=0.6)
    alice, bob = _requester(owner), _requester(owner, "bob", 2)
    alice.receive(owner.train(alice.request(ModelRequest(epsilon=0.5))))
    with pytest.raises(BudgetExhausted, match="analyst 'alice'"):
        owner.train(alice.request(ModelRequest(epsilon=0.2)))
    bob.receive(owner.train(bob.request(ModelRequest(epsilon=0.4))))
    entries = len(owner.ledger.entries)
    with pytest.raises(BudgetExhausted, match="owner's budget"):
        owner.train(bob.request(ModelRequest(epsilon=0.2)))
    assert owner.remaining().epsilon == pytest.approx(0.1) and len(owner.ledger.entries) == entries
    assert owner.remaining("alice").epsilon == pytest.approx(0.1)


def test_a_reused_request_id_is_refused():
    owner = _owner()
    msg = _requester(owner).request(ModelRequest(epsilon=0.1))
    owner.train(msg)
    with pytest.raises(ProtocolError, match="reused request id 0"):
        owner.train(msg)


def test_a_trim_the_classes_cannot_afford_is_refused_only_where_class_sizes_are_public():
    """Under replace (class sizes public) a trim too large is refused without spending.
    Under add/remove a refusal would tell the analyst, for free, whether every class has
    2m + 2 rows: the request is answered and charged like any other, whatever m is."""
    owner = _owner()
    alice = _requester(owner)
    with pytest.raises(ConfigError, match="needs at least"):
        owner.train(alice.request(ModelRequest(epsilon=0.5, trim=500, neighbours="replace")))
    assert owner.remaining().epsilon == 1.0
    for trim in (500, 1):  # a class too small, and every class large enough: the same path
        reply = owner.reply(alice.request(ModelRequest(epsilon=0.25, trim=trim)))
        assert reply.kind != "refused"
    assert owner.remaining().epsilon == pytest.approx(0.5)


@pytest.mark.parametrize("kw,match", [
    (dict(X=np.column_stack([X[:, 0] + 20, X[:, 1]])), "outside the declared bounds"),
    (dict(bounds="data"), "declared public bounds"),
    (dict(y=["maybe"] * 400), "unknown"),
])
def test_owner_checks_its_rows_at_construction(kw, match):
    args = dict(party_id="owner", X=X, y=LABELS, classes=CLASSES, run_id="r", epsilon=1.0,
                **SCHEMA)
    with pytest.raises(ConfigError, match=match):
        NBOwner(**{**args, **kw})


@pytest.mark.parametrize("req", [
    ModelRequest(), ModelRequest(method="vaidya", epsilon=2.0),
    ModelRequest(noise="gaussian", delta=1e-6, trim=0.1, neighbours="replace"),
    ModelRequest(noise="paper", trim=3, density="truncated", gamma=3.0),
])
def test_requests_round_trip(req):
    back, rid = ModelRequest.from_message(req.to_message(run_id="r", sender="a", receiver="o",
                                                         request=9))
    assert back == req and rid == 9


def test_bad_requests_are_rejected():
    with pytest.raises(ConfigError, match="finite epsilon"):
        ModelRequest(epsilon=float("inf"))
    msg = ModelRequest().to_message(run_id="r", sender="a", receiver="o", request=0)
    with pytest.raises(ProtocolError, match="malformed"):
        ModelRequest.from_message(dataclasses.replace(msg, payload={"request": np.asarray(0)}))
    with pytest.raises(ProtocolError, match="expected"):
        ModelRequest.from_message(dataclasses.replace(msg, kind="model"))


def _run(kind, max_concurrency=1):
    rt = make_runtime(kind)
    schema = FeatureSchema.build(2, **SCHEMA)
    owner = nb_owner_spec(party_id="owner", X=X, y=LABELS, classes=CLASSES, epsilon=2.0,
                          run_id="r", seed=5, **SCHEMA)
    specs = [dataclasses.replace(owner, max_concurrency=max_concurrency)]
    specs += [nb_requester_spec(party_id=a, owner="owner", run_id="r", classes=CLASSES,
                                schema=schema, index=i + 1) for i, a in enumerate(("a", "b"))]
    try:
        rt.start(specs, RunContext(run_id="r", secure_channels=True))
        models = ask(rt, [("a", "owner", ModelRequest(epsilon=0.5)),
                          ("b", "owner", ModelRequest(epsilon=1.0, method="vaidya")),
                          ("a", "owner", ModelRequest(epsilon=0.5, neighbours="replace"))])
        remaining = rt.state("owner", "remaining_budget").epsilon
        with pytest.raises(BudgetExhausted, match="owner's budget"):
            ask(rt, [("b", "owner", ModelRequest(epsilon=0.1))], first_round=9)
        (refused,) = ask(rt, [("a", "owner", ModelRequest(epsilon=0.2))], first_round=10,
                         refusals="return")
        assert isinstance(refused, Refused) and (refused.analyst, refused.request) == ("a", 2)
        assert rt.state("owner", "ledger_entries") == 3  # refusals charge nothing
        rt.close_transcript()
        rows = Transcript(rt.transcript_table()).canonical_rows()
    finally:
        rt.shutdown()
    return models, remaining, rows


def test_driver_in_process():
    models, remaining, rows = _run("inprocess")
    assert [m.epsilon for m in models] == [0.5, 1.0, 0.5] and remaining == 0.0
    kinds = [r[SCHEMA_COLUMNS.index("kind")] for r in rows]
    assert kinds.count("refused") == 2 and len(kinds) == 10  # refusals are messages too


@pytest.mark.ray
def test_ray_runtime_releases_the_same_models(ray_local):
    local, _, _ = _run("inprocess")
    for max_concurrency in (1, 3):  # a threaded owner actor gives the same run
        _, _, rows_local = _run("inprocess", max_concurrency)
        remote, remaining, rows = _run("ray", max_concurrency)
        assert remaining == 0.0 and rows == rows_local
        for a, b in zip(local, remote, strict=True):
            assert np.array_equal(a.params.theta, b.params.theta)
            assert np.array_equal(a.params.class_count, b.params.class_count)
