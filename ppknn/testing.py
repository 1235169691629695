"""The protocol contract kit: the checks every registered protocol passes, for any scenario.

A protocol is done when it passes this battery on its example scenario. Each
check takes the protocol (its registered name, its plugin or plugin class) and a
scenario (a TOML path, a mapping or a ``Scenario``); the scenario is cut to a
small in-process run (at most 60 queries) first. ppknn's own contract test runs
the battery on the built-in protocols; a third party runs it on theirs from
their own pytest, either check by check, all at once with :func:`check_plugin`,
or as a test class, a subclass of :class:`ContractSuite`::

    class TestMyProtocol(ContractSuite):
        protocol = "my-protocol"                  # registered (entry point) or a plugin class
        scenario = "scenarios/my-protocol.toml"

The checks:

``check_config``
    the ``[protocol]`` table is strict: an unknown key is refused naming
    ``protocol.<key>``, an unknown protocol name listing the registered ones.
``check_plan``
    planning twice from one seed gives the same parties, roles, queries and
    public facts (no party starts).
``check_run``
    it runs in-process and writes the common results folder: the summary's
    accuracy, baseline, privacy section and hops; one
    predictions row per query; ground truth saved when the plugin has the hook;
    ``ppknn show`` reads the folder.
``check_repeatable``
    two runs with one seed give identical transcripts and predictions; another
    seed gives a different transcript.
``check_leakage``
    a protocol with attacks has leakage rows, each stating its baseline and the
    advantage over it; ``ppknn leakage`` recomputes the same rows from the folder.
``check_audit``
    a protocol with a worst-case audit hook is audited on the scenario and no
    bound is exceeded.
``check_ray``, ``check_sweep`` (need Ray)
    Ray and in-process runs give identical transcripts and results; a sweep fanned
    out over Ray equals the sequential one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.simulations import registry
from ppknn.simulations.scenario import Scenario, parse_scenario, tomllib

ScenarioLike = str | os.PathLike[str] | Mapping[str, Any] | Scenario
PluginLike = str | registry.ProtocolPlugin | type[registry.ProtocolPlugin]

COMMON_FILES = ("scenario.json", "public.json", "predictions.csv", "parties.csv",
                "summary.json", "summary.svg", "transcript/totals.json")
"""Files every run's results folder holds."""
MAX_QUERIES = 60
"""The battery's runs answer at most this many queries."""
AUDIT_TRIALS = 20_000
"""Draws per input of the battery's worst-case audit."""


def builtin_names() -> list[str]:
    """The protocols ppknn ships (a plugin installed beside them is not listed)."""
    return [n for n in registry.names()
            if type(registry.get(n)).__module__.startswith(registry.BUILTIN + ".")]


def plugin_of(protocol: PluginLike) -> registry.ProtocolPlugin:
    """The registered plugin of a name, a plugin or a plugin class (``ConfigError`` if none)."""
    if isinstance(protocol, str):
        return registry.get(protocol)
    name = protocol.name
    found = registry.get(name)
    cls = protocol if isinstance(protocol, type) else type(protocol)
    if type(found) is not cls:
        raise ConfigError(f"protocol {name!r} is registered by {type(found).__module__}, "
                          f"not by {cls.__module__}")
    return found


_KEPT: dict[str, dict[tuple[str, str], Any]] = {}
_HERE: set[str] = set()
"""Names registered by :func:`registered` (in this process only: not on Ray's workers)."""


@contextlib.contextmanager
def registered(plugin: type[registry.ProtocolPlugin]) -> Iterator[registry.ProtocolPlugin]:
    """Register a plugin class for the duration (and the attacks its modules registered).

    For tests of a plugin that is not installed: the registry and the attack table
    are as before afterwards. A plugin already registered (installed through its
    entry point) is used as it is and stays registered.
    """
    from ppknn.simulations.leakage import attacks

    name = plugin.name
    if registry.find(name) is not None:
        yield plugin_of(plugin)
        return
    table = attacks._ATTACKS
    saved_plugins = dict(registry._REGISTRY)
    saved_attacks = {k: v for k, v in table.items() if k[0] != name}
    table.update(_KEPT.get(name, {}))  # attacks registered on import, kept from a last time
    try:
        registry.register(plugin)
        _HERE.add(name)
        yield registry.get(name)
    finally:
        _HERE.discard(name)
        _KEPT[name] = {k: v for k, v in table.items() if k[0] == name}
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved_plugins)
        table.clear()
        table.update(saved_attacks)


def scenario_data(scenario: ScenarioLike) -> dict[str, Any]:
    """The scenario as the mapping a TOML file holds."""
    if isinstance(scenario, Scenario):
        raise ConfigError("check_config needs the scenario's TOML path or mapping, not a "
                          "validated Scenario (it edits the table before validation)")
    if isinstance(scenario, Mapping):
        return json.loads(json.dumps(scenario))
    return tomllib.loads(Path(scenario).read_text(encoding="utf-8"))


def example(scenario: ScenarioLike, *, queries: int = MAX_QUERIES, **runtime: Any) -> Scenario:
    """The scenario, small (at most ``queries`` queries), on the runtime asked for."""
    from ppknn.simulations.scenario import Scenario, load_scenario, parse_scenario

    if isinstance(scenario, Scenario):
        sc = scenario
    elif isinstance(scenario, Mapping):
        sc = parse_scenario(dict(scenario))
    else:
        sc = load_scenario(scenario)
    n = min(sc.data.max_queries or queries, queries)
    return sc.with_overrides(data={"max_queries": n},
                             runtime={"kind": "inprocess", **runtime})


def _one_protocol(sc: Scenario, name: str) -> None:
    names = [c.name for c in sc.protocols]
    if names != [name]:
        raise AssertionError(f"the scenario runs {names}, not [{name!r}] alone")


def check_declaration(protocol: PluginLike, scenario: ScenarioLike) -> None:
    """The plugin has a title, roles and a guarantee; the scenario names it alone."""
    plugin = plugin_of(protocol)
    assert plugin.title and plugin.roles and plugin.guarantee, plugin.name
    _one_protocol(example(scenario), plugin.name)


def check_config(protocol: PluginLike, scenario: ScenarioLike) -> None:
    """Unknown keys and names are refused before any party starts, naming the key."""
    name = plugin_of(protocol).name
    data = scenario_data(scenario)
    data["protocol"]["no_such_key"] = 1
    with pytest.raises(ConfigError, match=r"unknown key 'protocol.no_such_key'"):
        parse_scenario(data)
    data["protocol"].pop("no_such_key")
    data["protocol"]["name"] = name + "-typo"
    with pytest.raises(ConfigError, match=r"protocol.name = .*unknown protocol.*registered"):
        parse_scenario(data)


def check_plan(protocol: PluginLike, scenario: ScenarioLike) -> None:
    """Two plans from one seed are the same: parties, roles, queries, public facts."""
    from ppknn.simulations.runner import prepare

    name = plugin_of(protocol).name
    sc = example(scenario)
    one, two = (prepare(sc).protocols[0] for _ in range(2))
    assert one.name == two.name == name
    a, b = one.plan, two.plan
    assert [s.party_id for s in a.specs] == [s.party_id for s in b.specs]
    assert [s.factory for s in a.specs] == [s.factory for s in b.specs]
    assert dict(a.roles) == dict(b.roles)
    np.testing.assert_array_equal(a.queries, b.queries)
    np.testing.assert_array_equal(a.query_labels, b.query_labels)
    assert json.dumps(a.public, sort_keys=True, default=str) == \
        json.dumps(b.public, sort_keys=True, default=str)
    assert len(a.queries) == len(a.query_labels) > 0


def run_folder(protocol: PluginLike, scenario: ScenarioLike, folder: Path) -> Path:
    """Run the small scenario in-process and write its results folder (returned)."""
    from ppknn.simulations.pipeline import write_results
    from ppknn.simulations.runner import execute

    plugin_of(protocol)
    result = execute(example(scenario), transcript_dir=Path(folder) / "transcript")
    return write_results(result, folder)


def check_results(protocol: PluginLike, folder: Path) -> None:
    """The common results shape of a run's folder, and ``ppknn show`` reads it."""
    plugin = plugin_of(protocol)
    name = plugin.name
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][name]
    assert 0.0 <= r["accuracy"] <= 1.0 and 0.0 <= r["baseline"]["accuracy"] <= 1.0
    assert set(r["privacy"]) == {"guarantee", "epsilon", "delta", "per_party"}
    assert r["hops"] >= 1
    assert summary["communication"]["messages"] > 0
    rows = (folder / "predictions.csv").read_text().splitlines()
    assert len(rows) == 1 + summary["queries"]
    assert rows[0].startswith(f"query,label,{name},{name}:baseline")
    truth = folder / "transcript" / f"truth-{name}.npz"
    assert truth.is_file() == plugin.has_ground_truth(), truth
    _cli_ok(["show", str(folder)])


def _cli_ok(args: list[str]) -> str:
    from typer.testing import CliRunner

    from ppknn.cli import app

    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, (args, done.output, done.exception)
    return done.output


def check_run(protocol: PluginLike, scenario: ScenarioLike, folder: Path) -> Path:
    """Run in-process, write the results folder and check it (:func:`check_results`)."""
    out = run_folder(protocol, scenario, Path(folder))
    check_results(protocol, out)
    return out


def check_repeatable(protocol: PluginLike, scenario: ScenarioLike) -> None:
    """One seed: identical transcripts and predictions; another seed: a different transcript."""
    from ppknn.simulations.runner import execute

    name = plugin_of(protocol).name
    sc = example(scenario)
    runs = [execute(s) for s in (sc, sc, sc.with_overrides(run={"seed": sc.run.seed + 1}))]
    rows = [r.transcript.canonical_rows() for r in runs]
    preds = [r.outcome_of(name).result.predictions for r in runs]
    assert rows[0], "the run recorded no message"
    assert rows[0] == rows[1], "one seed gave two different transcripts"
    np.testing.assert_array_equal(preds[0], preds[1], err_msg="one seed, two predictions")
    assert rows[2] != rows[0], "another seed gave the very same transcript"


def check_leakage(protocol: PluginLike, folder: Path) -> None:
    """Leakage rows with a baseline and an advantage; ``ppknn leakage`` recomputes them."""
    from ppknn.simulations.leakage import attacks
    from ppknn.simulations.leakage.table import read_table, rows_equal

    name = plugin_of(protocol).name
    rows = [r for r in read_table(folder / "leakage.csv") if r["protocol"] == name]
    if not attacks.defaults(name):
        assert rows == [], "leakage rows of a protocol with no default attack"
        return
    assert rows, f"{name} has default attacks {attacks.defaults(name)} but no leakage row"
    for r in rows:
        assert r["baseline_name"], r
        for key in ("baseline", "advantage", "advantage_low", "advantage_high"):
            assert isinstance(r[key], (int, float)) and not isinstance(r[key], bool), (key, r)
    assert any(math.isfinite(r["advantage"]) for r in rows), "no row measures an advantage"
    before = read_table(folder / "leakage.csv")
    _cli_ok(["leakage", str(folder)])
    assert rows_equal(before, read_table(folder / "leakage.csv"))


def check_audit(protocol: PluginLike, scenario: ScenarioLike, *,
                trials: int = AUDIT_TRIALS) -> list[Any]:
    """The worst-case audit of a protocol with the hook: no measured ε above its bound.

    Returns the audit's rows (none for a protocol without a worst-case model).
    """
    from ppknn.simulations.leakage.audit import audit_worst_case, worst_cases

    plugin = plugin_of(protocol)
    sc = example(scenario)
    if type(plugin).worst_case is registry.ProtocolPlugin.worst_case or not worst_cases(sc):
        return []
    rows = [run.row for run in audit_worst_case(sc, trials=trials)]
    assert rows and {r.protocol for r in rows} == {plugin.name}
    for r in rows:
        assert r.verdict == "within bound", (
            f"{r.protocol}: the audit's ε lower bound {r.ci_low:.4g} is {r.verdict} "
            f"{r.bound:.4g} ({r.bound_name}; {r.note})")
    return rows


def check_ray(protocol: PluginLike, scenario: ScenarioLike, folder: Path) -> None:
    """Ray and in-process runs give identical transcripts and results (Ray must be up)."""
    from ppknn.core.transcript import Transcript
    from ppknn.simulations.results import summary_of
    from ppknn.simulations.runner import execute

    plugin = plugin_of(protocol)
    layout = "hosted" if any("n" in r.count for r in plugin.roles) else "actor-per-party"
    local = execute(example(scenario), transcript_dir=Path(folder) / "local")
    on_ray = execute(example(scenario, kind="ray", layout=layout),
                     transcript_dir=Path(folder) / "ray")
    np.testing.assert_array_equal(local.predictions, on_ray.predictions)

    def strip(summary: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in summary.items() if k not in ("timings_s", "runtime")}

    assert strip(summary_of(local)) == strip(summary_of(on_ray))
    rows_local = Transcript(Path(folder) / "local").canonical_rows()
    assert rows_local == Transcript(Path(folder) / "ray").canonical_rows()
    assert len(rows_local) > 0


def check_sweep(protocol: PluginLike, scenario: ScenarioLike, folder: Path) -> None:
    """A sweep fanned out over Ray equals the sequential one (Ray must be up)."""
    from ppknn.simulations.sweep import Sweep, run_sweep

    name = plugin_of(protocol).name
    if name in _HERE:
        pytest.skip(f"{name!r} is registered in this process only; a sweep's points are "
                    "validated on Ray's workers, which find a protocol by its entry point: "
                    "install the package to run this check")
    base = scenario_data(scenario)
    base.pop("run", None)
    spec = Sweep.model_validate({"sweep": {"name": f"contract-{name}", "seeds": [0, 1]},
                                 "base": base, "grid": {"data.max_queries": [20, 30]}})
    fanned = run_sweep(spec, parallel="ray", output=Path(folder) / "ray")
    sequential = run_sweep(spec, parallel="sequential", output=Path(folder) / "seq")

    def strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # timings dropped; NaN (a metric the run has no value for) as text
        return [{k: ("nan" if isinstance(v, float) and v != v else v)
                 for k, v in r.items() if k != "protocol_s"} for r in rows]

    assert strip(fanned) == strip(sequential)
    assert len({r["run_id"] for r in fanned}) == 4  # unique run ids
    assert {r.get("protocol") or r.get(f"{name}:protocol") for r in fanned} == {name}
    assert (Path(folder) / "ray" / "sweep.png").is_file()


def check_plugin(protocol: PluginLike, scenario: ScenarioLike, folder: Path, *,
                 ray: bool = False) -> None:
    """The whole battery (module docstring); with ``ray``, the Ray checks too (Ray up)."""
    check_declaration(protocol, scenario)
    if not isinstance(scenario, Scenario):
        check_config(protocol, scenario)
    check_plan(protocol, scenario)
    out = check_run(protocol, scenario, Path(folder) / "run")
    check_repeatable(protocol, scenario)
    check_leakage(protocol, out)
    check_audit(protocol, scenario)
    if ray:
        check_ray(protocol, scenario, Path(folder) / "ray")
        check_sweep(protocol, scenario, Path(folder) / "sweep")


class ContractSuite:
    """The battery as a pytest class: subclass it as ``Test...`` and set two attributes.

    ``protocol``: the registered name, or the plugin class (registered for the tests
    when it is not installed: :func:`registered`); ``scenario``: its example scenario
    (a TOML path or a mapping). A subclass may override the fixtures instead
    (``plugin``, ``contract_scenario``, parametrised; ``ray_session``, a Ray instance the
    Ray tests share).
    The Ray tests carry the ``ray`` mark.
    """

    protocol: PluginLike = ""
    scenario: ScenarioLike = ""

    @pytest.fixture
    def plugin(self) -> Iterator[registry.ProtocolPlugin]:
        """The plugin under test, registered for the test."""
        p = self.protocol
        if isinstance(p, type) and registry.find(p.name) is None:
            with registered(p) as found:
                yield found
        else:
            yield plugin_of(p)

    @pytest.fixture
    def contract_scenario(self, plugin: registry.ProtocolPlugin) -> ScenarioLike:
        """The scenario the battery runs."""
        return self.scenario

    @pytest.fixture
    def ray_session(self) -> Any:
        """A running Ray for the Ray tests; ``None``: each run starts a local one itself."""
        return None

    def test_declares_roles_and_guarantee(self, plugin, contract_scenario):
        """:func:`check_declaration`."""
        check_declaration(plugin, contract_scenario)

    def test_strict_protocol_table(self, plugin, contract_scenario):
        """:func:`check_config`."""
        check_config(plugin, contract_scenario)

    def test_plan_is_determined_by_the_seed(self, plugin, contract_scenario):
        """:func:`check_plan`."""
        check_plan(plugin, contract_scenario)

    def test_runs_and_writes_the_common_results_shape(self, plugin, contract_scenario,
                                                      tmp_path):
        """:func:`check_run`."""
        check_run(plugin, contract_scenario, tmp_path / "run")

    def test_same_seed_same_run_other_seed_other_run(self, plugin, contract_scenario):
        """:func:`check_repeatable`."""
        check_repeatable(plugin, contract_scenario)

    def test_leakage_rows_state_their_baseline(self, plugin, contract_scenario, tmp_path):
        """:func:`check_leakage`."""
        check_leakage(plugin, run_folder(plugin, contract_scenario, tmp_path / "run"))

    def test_audit_stays_within_the_bound(self, plugin, contract_scenario):
        """:func:`check_audit`."""
        check_audit(plugin, contract_scenario)

    @pytest.mark.ray
    def test_ray_and_inprocess_give_identical_runs(self, plugin, contract_scenario,
                                                   ray_session, tmp_path):
        """:func:`check_ray`."""
        check_ray(plugin, contract_scenario, tmp_path)

    @pytest.mark.ray
    def test_sweep_fanned_out_equals_sequential(self, plugin, contract_scenario,
                                                ray_session, tmp_path):
        """:func:`check_sweep`."""
        check_sweep(plugin, contract_scenario, tmp_path)


__all__ = ["AUDIT_TRIALS", "COMMON_FILES", "ContractSuite", "MAX_QUERIES", "builtin_names",
           "check_audit", "check_config", "check_declaration", "check_leakage", "check_plan",
           "check_plugin", "check_ray", "check_repeatable", "check_results", "check_run",
           "check_sweep", "example", "plugin_of", "registered", "run_folder", "scenario_data"]
