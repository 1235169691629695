"""Simulation-only ground truth the leakage scorers need beyond provenance.

Adversaries never see it; only scorers read it. It is computed once, after
a run, from the run's own data and plans, and saved beside the transcript
(``transcript/truth-PROTOCOL.npz``) so that ``ppknn leakage`` recomputes the
table from the results folder alone, whatever the randomness mode.

Per protocol:

``ppknn-ring``
    ``votes/<owner>``: each owner's encoded local vote vector ``(Q, C)``
    (computed by the owner's own code from the final broadcast vector).
``ring-nb``
    ``stats/<owner>``: each owner's encoded Naive Bayes statistics vector;
    ``members_X``/``members_y`` (the union of the owners' rows) and
    ``others_X``/``others_y`` (the held-out query rows); ``members_pick`` and
    ``others_pick``, the membership test's class-matched random samples of them
    (positions, drawn from the run's seed:
    :func:`~simulations.sampling.matched_sample`).
``dp-knn``
    ``queries`` and ``nonprivate``: the instances and the labels the union
    gives them without noise (the baseline's answers).
``dp-nb``
    ``members_X``/``members_y``, ``others_X``/``others_y`` and the two picks as for
    ``ring-nb``.
``pca-perturbation``
    ``records``: the sanitizer's rows normalised to [0, 1] by the public bounds;
    ``instances``: the miner's instances (the query rows, as the miner holds them).
``dptt``
    ``queries``: the client's private queries. With the GEO baseline
    (``geo_radius``), also the GEO server's view: GEO runs beside the protocol
    (in the plugin's measurement, not through the runtime), so its noisy
    points are in no transcript; ``geo/slot`` and ``geo/point`` are the
    perturbed copies of the queries the GEO server answered (the same stream of
    ``[run].seed`` the measurement draws from, so the very points it used),
    ``geo/epsilon``, ``geo/radius``: its ε* and privacy radius.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.errors import DataError

Truth = dict[str, np.ndarray]


def _owners_data(outcome: Any, data: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for spec in outcome.plan.specs:
        kw = spec.kwargs
        if "X" in kw and "y" in kw:
            out[spec.party_id] = (np.asarray(kw["X"]), np.asarray(kw["y"]))
    return out


def _ring(outcome: Any, data: Any) -> Truth:
    from ppknn.protocols.ppknn.config import RingSetup

    detail = outcome.result.detail
    plan = outcome.plan
    truth: Truth = {}
    setup = RingSetup(ring=tuple(plan.public["ring"]), start=plan.public["start"],
                      params=plan.config.params, weighting=plan.config.weighting)
    from ppknn.core.errors import PpknnError

    for spec in plan.specs:
        try:  # the owner's own code, from its construction arguments
            owner = spec.factory(**spec.kwargs)
            owner.configure(setup)
            owner.load_queries(plan.queries)
            owner._set_final(np.asarray(detail.final_vector))
        except PpknnError:  # e.g. owners built for query blocks: no vote truth, no row
            continue
        truth[f"votes/{spec.party_id}"] = np.asarray(owner.last_votes, dtype=np.uint64)
    return truth


def _members(data: Any, plan: Any, protocol: str) -> Truth:
    from ppknn.simulations.sampling import matched_sample

    members_y = np.asarray(data.train_y, dtype=np.int64)
    others_y = np.asarray(plan.query_labels, dtype=np.int64)
    pick_in, pick_out = matched_sample(members_y, others_y,
                                       data.policy.generator("membership-sample", protocol))
    return {"members_X": np.asarray(data.train_X, dtype=np.float64), "members_y": members_y,
            "others_X": np.asarray(plan.queries, dtype=np.float64), "others_y": others_y,
            "members_pick": pick_in, "others_pick": pick_out}


def _ring_nb(outcome: Any, data: Any) -> Truth:
    from ppknn.protocols.ring_nb import steps as nb

    lower = np.asarray(outcome.plan.public["bounds"]["lower"], dtype=np.float64)
    upper = np.asarray(outcome.plan.public["bounds"]["upper"], dtype=np.float64)
    truth = _members(data, outcome.plan, outcome.name)
    for party, (X, y) in _owners_data(outcome, data).items():
        stats = nb.local_statistics(X, y, data.n_classes, lower, upper)
        truth[f"stats/{party}"] = nb.encode_signed(stats)
    return truth


def _dp_knn(outcome: Any, data: Any) -> Truth:
    return {"queries": np.asarray(outcome.plan.queries, dtype=np.float64),
            "nonprivate": np.asarray(outcome.baseline.predictions, dtype=np.int64),
            "train_class_counts": np.bincount(np.asarray(data.train_y, dtype=np.int64),
                                              minlength=int(data.n_classes))}


def _dp_nb(outcome: Any, data: Any) -> Truth:
    return _members(data, outcome.plan, outcome.name)


def _pca(outcome: Any, data: Any) -> Truth:
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    return {"records": normalise(data.train_X, data.bounds.lower, data.bounds.upper),
            "instances": np.asarray(outcome.plan.queries, dtype=np.float64)}


def _dptt(outcome: Any, data: Any) -> Truth:
    truth: Truth = {"queries": np.asarray(outcome.plan.queries, dtype=np.float64)}
    radius = getattr(outcome.config, "geo_radius", None)
    if radius is None:
        return truth
    from ppknn.simulations.plugins.dptt import geo_draws

    # the measurement's draws (once per run: in secure mode nothing can replay them)
    mech, (slots, points) = geo_draws(outcome.config, outcome.result.detail, data)
    truth.update({"geo/slot": slots, "geo/point": points,
                  "geo/epsilon": np.asarray(mech.epsilon), "geo/radius": np.asarray(radius)})
    return truth


BUILDERS: dict[str, Callable[[Any, Any], Truth]] = {
    "ppknn-ring": _ring, "ring-nb": _ring_nb, "dp-knn": _dp_knn, "dp-nb": _dp_nb,
    "pca-perturbation": _pca, "dptt": _dptt,
}
"""Protocol name -> ground-truth builder (module docstring)."""


def truth_of(outcome: Any, data: Any) -> Truth:
    """The ground truth of one protocol's outcome (empty when none is registered)."""
    build = BUILDERS.get(outcome.name)
    return build(outcome, data) if build is not None else {}


def truth_path(transcript_dir: Path, protocol: str) -> Path:
    """Where a protocol's ground truth sits beside the transcript."""
    return Path(transcript_dir) / f"truth-{protocol}.npz"


def save_truth(truth: Mapping[str, np.ndarray], path: Path) -> Path:
    """Write ground truth (compressed ``.npz``).

    Per-party arrays of one kind (``votes/<owner>``, ``stats/<owner>``: a
    common prefix up to the last ``/``, the same shape and dtype) are stored
    as one stacked array with the parties' names beside it
    (``stack:votes/`` and ``names:votes/``): a 100,000-owner ring would
    otherwise write and read 100,000 archive members. :func:`load_truth`
    gives back the same mapping either way.
    """
    arrays: dict[str, Any] = {k: np.asarray(v) for k, v in truth.items()}
    groups: dict[str, list[str]] = {}
    for key in arrays:
        if "/" in key:
            groups.setdefault(key[:key.rindex("/") + 1], []).append(key)
    out: dict[str, Any] = dict(arrays)
    for prefix, keys in groups.items():
        first = arrays[keys[0]]
        if len(keys) < 2 or any(arrays[k].shape != first.shape or arrays[k].dtype != first.dtype
                                for k in keys):
            continue
        out[f"stack:{prefix}"] = np.stack([arrays[k] for k in keys])
        out[f"names:{prefix}"] = np.array([k[len(prefix):] for k in keys], dtype=np.str_)
        for k in keys:
            del out[k]
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")  # renamed once whole: a failure while
    try:  # writing (a full disk) never leaves a truncated truth to be read back
        with open(partial, "wb") as f:
            np.savez_compressed(f, **out)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def load_truth(path: Path) -> Truth:
    """Read ground truth back (empty when the file is absent)."""
    if not Path(path).is_file():
        return {}
    try:
        return _read_truth(path)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise DataError(f"ground truth {str(path)!r} is damaged ({type(exc).__name__}: {exc}); "
                        "it cannot be scored from") from None


def _read_truth(path: Path) -> Truth:
    out: Truth = {}
    with np.load(path, allow_pickle=False) as f:
        for key in f.files:
            if key.startswith("stack:"):
                prefix = key[len("stack:"):]
                stack = f[key]
                out.update({prefix + str(name): stack[i]
                            for i, name in enumerate(f[f"names:{prefix}"])})
            elif not key.startswith("names:"):
                out[key] = f[key]
    return out


__all__ = ["BUILDERS", "Truth", "load_truth", "save_truth", "truth_of", "truth_path"]
