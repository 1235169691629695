"""The leakage table of a run, and its recomputation from a results folder.

:func:`leakage_rows` scores every adversary of every protocol of a run:
each protocol's default attacks (:func:`simulations.leakage.attacks.defaults`)
plus the scenario's scripted ``[[adversary]]`` entries. The attacks read
views of the transcript; scorers read provenance and the ground truth saved
beside the transcript (:mod:`simulations.leakage.truth`).

:func:`run_table` does it for a :class:`~simulations.runner.RunResult`
(called by :func:`simulations.pipeline.write_results`); :func:`recompute`
does it from a results folder (``ppknn leakage``): ``public.json``,
``scenario.json`` and ``transcript/`` are all it reads, and it gives the
same rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript
from ppknn.simulations.leakage import attacks
from ppknn.simulations.leakage.table import LeakageRow
from ppknn.simulations.leakage.truth import (
    has_truth,
    load_truth,
    save_truth,
    truth_of,
    truth_path,
)


def scripted(scenario_adversaries: Sequence[Mapping[str, Any]], protocols: Sequence[str]
             ) -> list[attacks.Adversary]:
    """The scenario's ``[[adversary]]`` entries as adversaries (validated)."""
    out = []
    for i, entry in enumerate(scenario_adversaries):
        where = f"adversary[{i}]"
        protocol = entry.get("protocol") or (protocols[0] if len(protocols) == 1 else None)
        if protocol is None:
            raise ConfigError(f"{where}.protocol: the scenario runs {list(protocols)}; name "
                              "the protocol this adversary attacks")
        if protocol not in protocols:
            raise ConfigError(f"{where}.protocol = {protocol!r}: not a protocol of this "
                              f"scenario; allowed: {list(protocols)}")
        attack = attacks.get(protocol, str(entry.get("attack")))
        observers = tuple(entry.get("observers") or ())
        if attack.needs_observers and not observers:
            raise ConfigError(f"{where}.observers: attack {attack.name!r} needs the observing "
                              "parties (a coalition), e.g. observers = [\"owner-00\", "
                              "\"owner-02\"]")
        params = dict(entry.get("params") or {})
        unknown = sorted(set(params) - set(attack.params))
        if unknown:
            raise ConfigError(f"{where}.params: unknown parameter(s) {unknown} for attack "
                              f"{attack.name!r}; allowed: {list(attack.params)}")
        out.append(attacks.Adversary(protocol, attack.name, observers, params, scripted=True))
    return out


def check_observers(adversaries: Sequence[attacks.Adversary],
                    parties: Mapping[str, Sequence[str]]) -> None:
    """Every scripted observer must be a party of the protocol it attacks."""
    for adv in adversaries:
        known = set(parties.get(adv.protocol, ()))
        unknown = sorted(set(adv.observers) - known)
        if unknown:
            shown = sorted(known)[:20]
            raise ConfigError(f"[[adversary]] {adv.attack!r} on {adv.protocol!r}: observers "
                              f"{unknown} are not parties of it; its parties: {shown}")


def score(protocol: str, transcript: Transcript, public: Mapping[str, Any],
          truth: Mapping[str, Any], adversaries: Sequence[attacks.Adversary]
          ) -> list[LeakageRow]:
    """Rows of every adversary of ``protocol``."""
    ctx = attacks.Context(protocol=protocol, transcript=transcript, public=public, truth=truth)
    rows: list[LeakageRow] = []
    for adv in adversaries:
        if adv.protocol == protocol:
            rows.extend(attacks.get(protocol, adv.attack).scorer(ctx, adv))
    return rows


def adversaries_for(protocols: Sequence[str], scenario_adversaries: Sequence[Mapping[str, Any]]
                    ) -> list[attacks.Adversary]:
    """Default attacks of each protocol, then the scripted ones."""
    out = [a for p in protocols for a in attacks.defaults(p)]
    return out + scripted(scenario_adversaries, protocols)


def _scenario_adversaries(scenario_dump: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(scenario_dump.get("adversary") or ())


_SAVED: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}
"""The truths the latest :func:`save_truths` wrote, by path, with the file's size and
modification time: the run's scoring takes them from here instead of reading the file
back (each entry once)."""


def save_truths(result: Any, transcript_dir: Path) -> None:
    """Save each protocol's ground truth in ``transcript_dir``.

    An empty truth is saved too: a missing file then always means a folder
    that cannot be scored (:func:`recompute` refuses it). What is saved is
    kept until the run's leakage table is scored (:func:`run_table`).
    """
    _SAVED.clear()
    for o in result.outcomes:
        if has_truth(o.name):
            path = truth_path(transcript_dir, o.name)
            if path.is_file():
                continue
            truth = {k: np.asarray(v) for k, v in truth_of(o, result.prepared.data).items()}
            save_truth(truth, path)
            _SAVED[path] = (_stamp(path), truth)


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _truth_at(outcome: Any, data: Any, path: Path | None) -> dict[str, Any]:
    """The outcome's ground truth: read from ``path`` if saved there, else computed.

    A computed truth is saved at ``path`` for a protocol that has ground truth.
    A truth :func:`save_truths` just wrote there is taken as kept, once, when the
    file is unchanged since (same size and modification time).
    """
    if path is not None and path.is_file():
        kept = _SAVED.pop(path, None)
        if kept is not None and kept[0] == _stamp(path):
            return kept[1]
        return load_truth(path)
    truth = truth_of(outcome, data)
    if path is not None and has_truth(outcome.name):
        save_truth(truth, path)
    return truth


def run_table(result: Any, *, save: bool = True, truth_dir: Path | None = None
              ) -> list[LeakageRow]:
    """The leakage table of a run.

    Each protocol's ground truth is read from ``truth_dir`` (default: the
    run's transcript folder) when it was saved there as the run was recorded
    (:func:`save_truths`); otherwise it is computed and, with ``save``,
    saved there.
    """
    prepared = result.prepared
    names = [o.name for o in result.outcomes]
    advs = adversaries_for(names, _scenario_adversaries(prepared.scenario.model_dump()))
    rows: list[LeakageRow] = []
    transcript = result.transcript
    if transcript is None:
        return rows
    public = prepared.public()["protocols"]
    folder = truth_dir if truth_dir is not None else result.transcript_dir
    for o in result.outcomes:
        path = truth_path(folder, o.name) if save and folder is not None else None
        truth = _truth_at(o, prepared.data, path)
        rows.extend(score(o.name, transcript, _jsonable(public[o.name]), truth, advs))
    return rows


def _jsonable(public: Mapping[str, Any]) -> dict[str, Any]:
    """The public facts as ``public.json`` holds them (so recomputation sees the same)."""
    return json.loads(json.dumps(dict(public), default=float))


def recompute(results_dir: Path) -> list[LeakageRow]:
    """The leakage table from a results folder alone (``ppknn leakage``)."""
    results_dir = Path(results_dir)
    public_all = json.loads((results_dir / "public.json").read_text())
    scenario_path = results_dir / "scenario.json"
    scenario = json.loads(scenario_path.read_text()) if scenario_path.is_file() else {}
    per_protocol = public_all.get("protocols")
    if per_protocol is None:  # a one-protocol folder's flat facts: the scenario names it
        name = (scenario.get("protocol") or {}).get("name")
        if not name:
            raise ConfigError(f"{str(results_dir)!r}: public.json lists no protocols and no "
                              "scenario.json names the one it ran")
        per_protocol = {name: public_all}
    names = list(per_protocol)
    advs = adversaries_for(names, _scenario_adversaries(scenario))
    transcript = Transcript(results_dir / "transcript")
    rows: list[LeakageRow] = []
    for name in names:
        path = truth_path(results_dir / "transcript", name)
        if has_truth(name) and not path.is_file():
            raise ConfigError(f"{str(results_dir)!r} has no transcript/{path.name}: the ground "
                              f"truth {name!r}'s scorers need (written with the results of "
                              "`ppknn run` and `Result.write`); without it rows would be "
                              "missing from the table")
        truth = load_truth(path)
        rows.extend(score(name, transcript, per_protocol[name], truth, advs))
    return rows


__all__ = ["adversaries_for", "check_observers", "recompute", "run_table", "save_truths", "score",
           "scripted"]
