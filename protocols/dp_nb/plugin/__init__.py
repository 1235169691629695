"""``dp-nb``: DP Naive Bayes with smooth sensitivity, released by an NB owner (Zafarani & Clifton).

Scenario table::

    [protocol]
    name = "dp-nb"
    method = "global"          # the estimator's default (Laplace at global sensitivity on
                               # centred sums over the noisy counts); "smooth" (the paper),
                               # "vaidya", "bun-steinke", "non-private"
    budget_split = [1.0, 2.0, 1.0]  # ε to the class counts, means, variances (the estimator's
                               # default); "equal": the paper's ε / (2p + q + 1) per release
    noise_floor = 1.0          # released variances >= their own noise scale (0: off, the paper)
    # paper = true             # the paper's method, budget_split and noise_floor where not given
    epsilon = 1.0              # ε of each released model
    delta = 0.0                # δ of each model (> 0 only with noise = "laplace"/"gaussian")
    # delta_from_n = "1/n"     # or "1/n^2": δ from the training size n (then delta = 0)
    noise = "polynomial"       # the proven calibration; "paper": the paper's constant
    gamma = 4.0                # tail exponent of the polynomial noise
    trim = "auto"              # trimmed statistics: "auto", an integer m, or a fraction < 0.5
    neighbours = "add-remove"  # or "replace" (the paper's model: class sizes public)
    # sensitivity = "exact"    # replace only (default there); "bound": the looser pair bound
    global_fallback = true     # global sensitivity where the smooth release cannot win
    density = "gaussian"       # or "truncated" (normal truncated to the bounds)
    categorical = "counts"     # declared categorical columns: noisy counts per (class, value);
                               # "one-hot": their indicator columns as numeric features
    # budget = 2.0             # the owner's total ε (default: what the requests cost)
    # analyst_budget = 1.0     # cap per analyst (default: none)
    # accountant = "auto"      # the ledger's composition: "basic", "advanced", "pld" ("auto":
                               # "pld" when the budget's δ > 0); models are charged by their
                               # declared (ε, δ), which has no known loss law: "basic" there

Defaults: those of the :class:`~ppknn.protocols.dp_nb.estimator.DPNaiveBayes` estimator
(``method = "global"``, ``budget_split = [1, 2, 1]``, ``noise_floor = 1``), chosen because
the paper's lose to IBM diffprivlib's ``GaussianNB`` on the shipped datasets
(``docs/benchmarks/dp-nb-vs-diffprivlib/``). ``paper = true`` gives the paper's
(``method = "smooth"``, ``budget_split = "equal"``, ``noise_floor = 0``) for every key
the scenario does not set; the Zafarani reproduction runs with it.

Parties: one ``nb-owner`` holding the union of the training rows and a
privacy ledger, and ``[parties].analysts`` analysts (``nb-analyst-NN``), each
requesting one model. The query rows (in the run's random order, stratified
by class) are split into as many contiguous shares as there are analysts;
each share is classified with its analyst's released model (unanswered if the
owner refused the request). Declared
bounds (``[data.bounds]``) are required -- they are the schema the noise is
calibrated to (a categorical column's indicator bounds are not used).

Categorical features: a column the dataset declares categorical (its manifest entry,
:mod:`core.data`, which one-hot encodes it as ``col=value`` columns) is released, with
``categorical = "counts"`` (default; the paper's treatment, Algorithm 1), as noisy counts
per (class, value) -- one Laplace histogram per column at sensitivity 1 -- and the query
rows' indicator columns are read back as the value. ``"one-hot"`` keeps the indicator
columns as numeric features in ``[0, 1]``. Baseline: scikit-learn's ``GaussianNB`` on the
same rows (indicator columns as numbers).

Bounds: declared ``[data.bounds]`` are the public schema the noise is calibrated to.
``bounds = "data"`` reads them off the *training* rows only (never the queries) with a
:class:`~ppknn.core.errors.PrivacyLeakWarning`: they reveal the training rows' extremes
without a budget charge, as the paper's experiments (and the reproduction) do. The analyst
clips its query rows to the public bounds before classifying them (queries may lie outside
bounds read off the training rows).

δ from the training size (``delta_from_n``, the paper's δ = 1/n and 1/n² of §6): n is the
true size of the owner's training rows, so it is treated as public -- it is sent to every
analyst in each model's δ and it sets the noise's calibration. Under replace neighbouring
(sizes public) that is the model's own assumption; under add/remove, where n is private,
it is a deviation from a proof that takes δ as given, so the run warns
(:class:`~ppknn.core.errors.PrivacyLeakWarning`). Declare ``delta`` for a public δ.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_nb import METHODS
from ppknn.protocols.dp_nb.api import NBOwnerAPI, RequesterAPI
from ppknn.protocols.dp_nb.driver import drive
from ppknn.protocols.dp_nb.model import DENSITIES
from ppknn.protocols.dp_nb.noise import APPROXIMATE, NOISES
from ppknn.protocols.dp_nb.parties import nb_owner_spec, nb_requester_spec
from ppknn.protocols.dp_nb.parties.nb_owner import NBOwner, NBRequester
from ppknn.protocols.dp_nb.plugin import attacks as attacks  # registers its attacks
from ppknn.protocols.dp_nb.plugin import audit as audit_cases
from ppknn.protocols.dp_nb.plugin import deviations as deviating
from ppknn.protocols.dp_nb.plugin.baseline import gaussian_nb
from ppknn.protocols.dp_nb.protocol import ModelRequest
from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import NEIGHBOURS, SENSITIVITIES
from ppknn.simulations.leakage.truth import members_truth
from ppknn.simulations.prepare import PreparedData, owner_names
from ppknn.simulations.registry import (
    Baseline,
    Measured,
    Plan,
    ProtocolConfig,
    ProtocolPlugin,
    Role,
    register,
)
from ppknn.simulations.scenario import Scenario, epsilon_floor

NAME = "dp-nb"
OWNER = "nb-owner"
ANALYST_PREFIX = "nb-analyst"
MAX_CONCURRENCY = 8
"""Most requests the owner serves at once (on Ray) when its budget pays for all of them."""

Trim = (Literal["auto"] | Annotated[int, Field(ge=0, strict=True)]
        | Annotated[float, Field(ge=0, lt=0.5, allow_inf_nan=False, strict=True)])


PAPER_SETTINGS = {"method": "smooth", "budget_split": "equal", "noise_floor": 0.0}
"""What ``paper = true`` sets where the scenario does not: the paper's settings."""

MAX_GAMMA = 100.0
"""Largest exponent of the polynomial noise (beyond it its density is a box in all but
name, and its scale computations underflow)."""


class DPNBConfig(ProtocolConfig):
    """``[protocol]`` of ``dp-nb``.

    The keys of :class:`protocols.dp_nb.protocol.ModelRequest`, plus the owner's budgets.
    """

    name: Literal["dp-nb"] = "dp-nb"
    method: Literal[METHODS] = "global"  # type: ignore[valid-type]
    """The estimator's default, ``"global"``; the paper's is ``"smooth"`` (``paper = true``)."""
    epsilon: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True)
    delta: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False, strict=True)
    delta_from_n: Literal["1/n", "1/n^2"] | None = None
    """δ set from the training size n of the run (``1/n`` or ``1/n²``); ``delta`` must
    then be 0."""
    noise: Literal[NOISES] = "polynomial"  # type: ignore[valid-type]
    gamma: float = Field(4.0, gt=1, le=MAX_GAMMA, allow_inf_nan=False, strict=True)
    trim: Trim = "auto"
    neighbours: Literal[NEIGHBOURS] = "add-remove"  # type: ignore[valid-type]
    density: Literal[DENSITIES] = "gaussian"  # type: ignore[valid-type]
    sensitivity: Literal[SENSITIVITIES] | None = None  # type: ignore[valid-type]
    """``"exact"`` (replace only), ``"bound"``; default: exact under replace, else bound."""
    global_fallback: bool = Field(True, strict=True)
    """Release a class at global sensitivity where the smooth release cannot win."""
    budget_split: Literal["equal"] | tuple[
        Annotated[float, Field(gt=0, allow_inf_nan=False)],
        Annotated[float, Field(gt=0, allow_inf_nan=False)],
        Annotated[float, Field(gt=0, allow_inf_nan=False)]] = (1.0, 2.0, 1.0)
    """How a model's ε is split: ``(counts, means, variances)`` weights (the estimator's
    default ``(1, 2, 1)``) or ``"equal"`` (the paper's ε / (2p + q + 1) per release)."""
    noise_floor: float = Field(1.0, ge=0, allow_inf_nan=False, strict=True)
    """Globally released variances at least this multiple of their own noise scale (the
    estimator's default 1; the paper's 0: off)."""
    paper: bool = Field(False, strict=True)
    """The paper's settings for the keys not given: ``method = "smooth"``,
    ``budget_split = "equal"``, ``noise_floor = 0`` (Zafarani & Clifton, Algorithm 1)."""
    categorical: Literal["counts", "one-hot"] = "counts"
    """Declared categorical columns: noisy counts per (class, value), or their indicator
    columns as numeric features."""
    budget: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    """The owner's total ε (default: every analyst's request)."""
    budget_delta: float | None = Field(None, ge=0, lt=1, allow_inf_nan=False, strict=True)
    """The owner's total δ (default: every analyst's request)."""
    analyst_budget: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    """ε cap per analyst (default: none)."""
    accountant: Literal["auto", "basic", "advanced", "pld"] = "auto"
    """How the owner's ledger composes models (:mod:`core.dp.accountant`; ``"advanced"`` and
    ``"pld"`` need a budget δ > 0). A model is charged by its declared cost, which has no
    known loss law, so every accountant composes models by summation today."""

    _epsilon_floor = field_validator("epsilon")(epsilon_floor)

    @model_validator(mode="before")
    @classmethod
    def _paper_settings(cls, data: Any) -> Any:
        """``paper = true``: the paper's method, budget split and noise floor where not given."""
        if isinstance(data, Mapping) and data.get("paper") is True:
            data = {**PAPER_SETTINGS, **data}
        return data

    def delta_for(self, n_train: int | None) -> float:
        """δ of each model for ``n_train`` training rows (``delta`` unless ``delta_from_n``).

        >>> DPNBConfig(delta_from_n="1/n", noise="gaussian").delta_for(200)
        0.005
        """
        if self.delta_from_n is None:
            return self.delta
        if not n_train:
            raise ConfigError(f"protocol.delta_from_n = {self.delta_from_n!r} needs the "
                              "training size; allowed only in a run with training rows")
        return 1.0 / n_train if self.delta_from_n == "1/n" else 1.0 / n_train**2

    def resolved(self, n_train: int) -> DPNBConfig:
        """This configuration with δ set for ``n_train`` training rows."""
        if self.delta_from_n is None:
            return self
        return self.model_copy(update={"delta": self.delta_for(n_train), "delta_from_n": None})

    def request(self) -> ModelRequest:
        """The request every analyst sends (``delta_from_n`` resolved first: :meth:`resolved`)."""
        if self.delta_from_n is not None:
            raise ConfigError("protocol.delta_from_n: resolve δ from the training size first")
        return ModelRequest(method=self.method, epsilon=self.epsilon, delta=self.delta,
                            noise=self.noise, gamma=self.gamma, trim=self.trim,
                            neighbours=self.neighbours, density=self.density,
                            sensitivity=self.sensitivity, global_fallback=self.global_fallback,
                            budget=self.budget_split, noise_floor=self.noise_floor)

    @property
    def private(self) -> bool:
        """Whether a model costs anything (every method but ``"non-private"``)."""
        return self.method != "non-private"

    def owner_budget(self, analysts: int) -> tuple[float, float]:
        """The owner's (ε, δ) budget: as configured, else exactly what the requests cost."""
        eps = (self.budget if self.budget is not None
               else float(Fraction(repr(self.epsilon)) * analysts))
        delta = (self.budget_delta if self.budget_delta is not None
                 else min(float(Fraction(repr(self.delta)) * analysts), 0.999999))
        return eps, delta


def categorical_groups(feature_names: Sequence[str]) -> dict[str, list[int]]:
    """The one-hot groups of declared categorical columns: ``{column: [indices]}``.

    :mod:`core.data` names the indicator columns of a categorical column ``col=value``
    (numeric columns keep their name), in column order.

    >>> categorical_groups(["age", "sex=F", "sex=M", "hours"])
    {'sex': [1, 2]}
    """
    groups: dict[str, list[int]] = {}
    for j, name in enumerate(feature_names):
        if "=" in name:
            groups.setdefault(name.split("=", 1)[0], []).append(j)
    return groups


@dataclass(frozen=True)
class Encoding:
    """How the plugin turns the prepared rows into the NB owner's columns.

    ``numeric``: the numeric columns kept as they are; ``groups``: each categorical
    column's indicator columns (read back as the value's index). The owner's rows are the
    numeric columns followed by one code column per group.
    """

    numeric: tuple[int, ...]
    groups: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def of(cls, config: DPNBConfig, feature_names: Sequence[str]) -> Encoding:
        """Numeric and categorical columns under ``config.categorical``."""
        n = len(feature_names)
        groups = categorical_groups(feature_names) if config.categorical == "counts" else {}
        inside = {j for idx in groups.values() for j in idx}
        return cls(tuple(j for j in range(n) if j not in inside),
                   tuple((c, tuple(idx)) for c, idx in groups.items()))

    @property
    def categories(self) -> dict[int, list[int]]:
        """``{owner column: declared values}`` (value ``i`` is the group's ``i``-th column)."""
        p = len(self.numeric)
        return {p + g: list(range(len(idx))) for g, (_, idx) in enumerate(self.groups)}

    def apply(self, X: np.ndarray, what: str) -> np.ndarray:
        """The owner's columns of ``X``; a row whose group is not one-hot is refused."""
        X = np.asarray(X, dtype=np.float64)
        cols = [X[:, list(self.numeric)]]
        for col, idx in self.groups:
            block = X[:, list(idx)]
            bad = np.flatnonzero((np.abs(block.sum(axis=1) - 1.0) > 1e-9)
                                 | ~np.all((block == 0.0) | (block == 1.0), axis=1))
            if bad.size:
                raise ConfigError(
                    f"protocol.categorical = 'counts': column {col!r} is not one-hot in row "
                    f"{int(bad[0])} of the {what} (values {block[bad[0]].tolist()}); "
                    "allowed: declare it categorical in the dataset's manifest, or "
                    "categorical = 'one-hot' to treat its columns as numbers")
            cols.append(np.argmax(block, axis=1).astype(np.float64)[:, None])
        return np.hstack(cols)


def _refuse(source: str | None, key: str, value: Any, why: str) -> ConfigError:
    head = f"invalid scenario {source}:\n  " if source else ""
    return ConfigError(f"{head}{key} = {value!r}: {why}")


@register
class DPNaiveBayes(ProtocolPlugin):
    """DP Naive Bayes with smooth sensitivity, released to analysts (Zafarani & Clifton).

    An NB owner releases ε-DP Naive Bayes models to analysts, charging its ledger.
    """

    name = NAME
    config_model = DPNBConfig
    roles = (
        Role("owner", NBOwner, "1",
             "holds the union of the training rows and the ledger; trains and releases",
             api=NBOwnerAPI),
        Role("analyst", NBRequester, "[parties].analysts",
             "requests one model; its share of the query rows is classified with it",
             api=RequesterAPI),
    )
    guarantee = "ε-DP, add/remove one training record (released model)"
    adversaries = ("model-membership-inference", "owner-sees-requests")
    driver = staticmethod(drive)

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str
                       ) -> None:
        """Declared bounds; δ and noise that go together; budgets that pay for one model."""
        assert isinstance(config, DPNBConfig)
        # bounds = "data": the training rows' range (PrivacyLeakWarning from prepare_data),
        # as the paper's experiments; the queries are clipped to them by the analyst. Only
        # when written out: the default path never reads the rows to calibrate noise.
        if scenario.data.bounds == "data" and "bounds" not in scenario.data.model_fields_set:
            raise _refuse(source, "data.bounds", "data",
                          f"{self.name} calibrates its noise to public bounds and none are "
                          "declared; allowed: [data.bounds] lower/upper, or bounds = \"data\" "
                          "written out (the training rows' range: it reveals their extremes)")
        if config.delta_from_n is not None and config.delta != 0:
            raise _refuse(source, "protocol.delta_from_n", config.delta_from_n,
                          f"sets delta from the training size; delta = {config.delta!r} given "
                          "too; allowed: one of them (delta = 0 with delta_from_n)")
        if config.delta_from_n is not None and (config.method != "smooth"
                                                or config.noise not in APPROXIMATE):
            raise _refuse(source, "protocol.delta_from_n", config.delta_from_n,
                          f"a δ > 0 needs method 'smooth' and noise in {list(APPROXIMATE)} "
                          f"(got method {config.method!r}, noise {config.noise!r})")
        # a stand-in δ for the checks when it comes from the training size
        probe = config.resolved(2) if config.delta_from_n is not None else config
        if config.sensitivity == "exact" and config.neighbours != "replace":
            raise _refuse(source, "protocol.sensitivity", config.sensitivity,
                          f"the exact smooth sensitivity is defined for neighbours = 'replace' "
                          f"(got {config.neighbours!r}); allowed with add-remove: 'bound'")
        approximate = config.noise in APPROXIMATE
        if probe.delta > 0 and config.method != "smooth":
            raise _refuse(source, "protocol.delta", probe.delta,
                          f"delta > 0 is only for method 'smooth' (got method "
                          f"{config.method!r}); allowed here: 0")
        if config.method == "smooth" and approximate and probe.delta == 0:
            raise _refuse(source, "protocol.noise", config.noise,
                          f"noise {config.noise!r} gives (ε, δ)-DP and needs delta > 0; with "
                          f"delta = 0 use one of {[n for n in NOISES if n not in APPROXIMATE]}")
        if config.method == "smooth" and not approximate and probe.delta > 0:
            raise _refuse(source, "protocol.noise", config.noise,
                          f"delta = {probe.delta!r} needs noise in {list(APPROXIMATE)}; "
                          f"{config.noise!r} is pure ε-DP (set delta = 0)")
        try:
            probe.request().config(scenario.run.mode)
        except ConfigError as exc:  # e.g. gaussian noise in secure mode
            raise _refuse(source, "protocol.noise", config.noise,
                          f"{exc} (run.mode = {scenario.run.mode!r})") from None
        if config.private:
            if config.budget is not None and config.budget < config.epsilon:
                raise _refuse(source, "protocol.budget", config.budget,
                              f"below one model's cost (epsilon = {config.epsilon!r}): no "
                              "request could ever be answered; allowed: budget >= epsilon")
            if config.analyst_budget is not None and config.analyst_budget < config.epsilon:
                raise _refuse(source, "protocol.analyst_budget", config.analyst_budget,
                              f"below one model's cost (epsilon = {config.epsilon!r}): every "
                              "analyst would be refused; allowed: analyst_budget >= epsilon")
            if config.budget_delta is not None and config.budget_delta < probe.delta:
                raise _refuse(source, "protocol.budget_delta", config.budget_delta,
                              f"below one model's delta ({probe.delta!r}); allowed: "
                              "budget_delta >= delta")

    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """The NB owner (union of the training rows, the declared bounds) and the analysts."""
        assert isinstance(config, DPNBConfig)
        if config.delta_from_n is not None and config.neighbours == "add-remove":
            warnings.warn(  # deviation (module docstring, "δ from the training size")
                f"protocol.delta_from_n = {config.delta_from_n!r} sets δ from the true "
                f"training size n = {len(data.train_y)}, which every model message then "
                "reveals, under add/remove neighbouring where n is private; declare "
                "protocol.delta for a public δ", PrivacyLeakWarning, stacklevel=2)
        config = config.resolved(len(data.train_y))
        s = data.scenario
        lower, upper = data.bounds.lower, data.bounds.upper
        enc = Encoding.of(config, data.dataset.feature_names)
        num = list(enc.numeric)
        flat = [j for j in num if not upper[j] > lower[j]]  # indicator columns: not used
        if flat:
            j = int(flat[0])
            raise ConfigError(f"data.bounds: feature {j} of dataset {data.dataset.name!r} has "
                              f"zero width ([{lower[j]}, {upper[j]}]); {NAME} needs "
                              "lower < upper for every feature")
        counts = np.bincount(data.train_y, minlength=data.n_classes)
        if (config.method in ("smooth", "bun-steinke") and isinstance(config.trim, int)
                and not isinstance(config.trim, bool) and counts.min() < 2 * config.trim + 2):
            c = int(np.argmin(counts))
            raise _refuse(None, "protocol.trim", config.trim,
                          f"class {str(data.dataset.classes[c])!r} has {int(counts[c])} training "
                          f"rows; trim = m needs 2m + 2 rows per class; lower trim or use "
                          "\"auto\" or a fraction")
        classes = list(range(data.n_classes))
        lower, upper = lower[num], upper[num]
        owner_X = enc.apply(data.train_X, "training rows")
        queries = enc.apply(data.queries, "query rows")
        # the analyst's side: its query rows clipped to the public bounds (bounds read off
        # the training rows need not hold them); declared bounds hold every row already
        p = len(num)
        queries[:, :p] = np.clip(queries[:, :p], lower, upper)
        n_analysts = s.parties.analysts
        eps_budget, delta_budget = config.owner_budget(n_analysts)
        base = s.parties.n  # provenance codes after the data owners'
        owner = nb_owner_spec(
            party_id=OWNER, X=owner_X, y=data.train_y, classes=classes,
            bounds=(lower.copy(), upper.copy()), categories=enc.categories or None,
            epsilon=eps_budget,
            delta=delta_budget, analyst_epsilon=config.analyst_budget, run_id=data.run_id,
            index=base, seed=s.run.seed, mode=s.run.mode, accountant=config.accountant)
        # concurrent requests only when the budget pays for all of them: then no refusal
        # depends on the order requests reach the owner
        pays_all = (not config.private or (
            Fraction(repr(eps_budget)) >= Fraction(repr(config.epsilon)) * n_analysts
            and Fraction(repr(delta_budget)) >= Fraction(repr(config.delta)) * n_analysts))
        if pays_all and n_analysts > 1:
            owner = replace(owner, max_concurrency=min(n_analysts, MAX_CONCURRENCY))
        schema = FeatureSchema.build(owner_X.shape[1], bounds=(lower, upper),
                                     categories=enc.categories or None)
        analysts = owner_names(n_analysts, ANALYST_PREFIX)
        specs = [owner] + [
            nb_requester_spec(party_id=a, owner=OWNER, run_id=data.run_id, classes=classes,
                              schema=schema, index=base + 1 + i)
            for i, a in enumerate(analysts)]
        shares = np.array_split(np.arange(len(data.queries)), n_analysts)
        public = {
            "run_id": data.run_id, "owner": OWNER, "analysts": list(analysts),
            "query_shares": {a: [int(r[0]), int(r[-1]) + 1] if len(r) else []
                             for a, r in zip(analysts, shares)},
            "bounds": {"lower": lower.tolist(), "upper": upper.tolist()},
            "categorical": {c: [data.dataset.feature_names[j].split("=", 1)[1] for j in idx]
                            for c, idx in enc.groups},
            "classes": [str(c) for c in data.dataset.classes], "method": config.method,
            "noise": config.noise, "epsilon_per_model": config.epsilon,
            "delta_per_model": config.delta,
            "owner_budget": {"epsilon": eps_budget, "delta": delta_budget},
            "analyst_budget": config.analyst_budget,
        }
        return Plan(specs=tuple(specs), roles={"owner": (OWNER,), "analyst": analysts},
                    config=config.request(), queries=queries,
                    query_labels=data.query_labels, public=public)

    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """scikit-learn's ``GaussianNB`` on the owner's rows (one BLAS thread)."""
        return Baseline("GaussianNB (union, non-private)",
                        gaussian_nb(data.train_X, data.train_y, data.queries))

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: Any, baseline: Baseline, transcript: Transcript | None) -> Measured:
        """The release's settings, the owner's budget and accuracy over answered queries."""
        assert isinstance(config, DPNBConfig)
        config = config.resolved(len(data.train_y))
        answered = result.answered
        labels = data.query_labels
        eps_budget, delta_budget = plan.public["owner_budget"].values()
        metrics: dict[str, Any] = {
            "delta_per_model": config.delta, "gamma": config.gamma, "trim": config.trim,
            "neighbours": config.neighbours,
            "sensitivity": config.request().config().sensitivity,
            "global_fallback": config.global_fallback,
            "density": config.density, "categorical": config.categorical,
            "categorical_columns": sorted(plan.public.get("categorical", {})),
            "budget": eps_budget, "budget_delta": delta_budget,
            "analyst_budget": config.analyst_budget,
            "calibration": ("the paper's constant (Cauchy √2·S/ε′, reproduction option, not "
                            "proven)" if config.noise == "paper" else
                            "non-private" if not config.private else
                            f"{config.noise} (proven: NRS admissible noise)"),
            "accuracy_answered": (float(np.mean(result.predictions[answered]
                                                == labels[answered]))
                                  if answered.any() else None),
        }
        return Measured(metrics=metrics)

    def ground_truth(self, outcome: Any, data: PreparedData) -> dict[str, np.ndarray]:
        """Membership truth: :func:`~simulations.leakage.truth.members_truth`."""
        return members_truth(data, outcome.plan, outcome.name)

    def audit_setup(self, prepared: Any, protocol: Any, common: Mapping[str, Any], *,
                    record: int, repeats: int) -> Any:
        """The owner without row ``record``; the analyst's noisy class count (audit module)."""
        return audit_cases.replay_setup(dict(common), protocol, record)

    def worst_case(self, scenario: Scenario, protocol: Any, *, n_test: int,
                   confidence: float, deviation: str) -> Any:
        """The class-count release at its budget share."""
        return audit_cases.worst_case(protocol, deviation)

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """The class-count case at ``epsilon``."""
        return [audit_cases.dp_nb(epsilon, deviation=deviation)]

    def compare_defaults(self) -> Mapping[str, Any]:
        """``ppknn compare --quick``: the privacy key, its two levels (most private first)."""
        return {"privacy_key": "epsilon", "quick_levels": [0.5, 10.0], "quick_audit": True}

    def deviations(self) -> Mapping[str, Any]:
        """Its deviating parties (:mod:`.deviations`)."""
        return deviating.KINDS

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """ε per model and spent; models released and refused."""
        return [("ε per model / spent (owner's ledger) / budget",
                 f"{summary['epsilon_per_model']:.4g} / {summary['epsilon_spent']:.4g} / "
                 f"{summary['budget']:.4g}"),
                ("models released / requests refused",
                 f"{summary['released_models']} / {summary['refused_requests']}"),
                ("method / noise", f"{summary['method']} / {summary['noise']}")]


__all__ = ["ANALYST_PREFIX", "NAME", "OWNER", "DPNBConfig", "DPNaiveBayes", "Encoding",
           "categorical_groups"]
