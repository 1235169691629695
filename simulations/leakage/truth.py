"""Simulation-only ground truth the leakage scorers need beyond provenance.

Adversaries never see it; only scorers read it. It is computed once, after
a run, from the run's own data and plans, and saved beside the transcript
(``transcript/truth-PROTOCOL.npz``) so that ``ppknn leakage`` recomputes the
table from the results folder alone, whatever the randomness mode.

Each protocol's plugin builds its own
(:meth:`simulations.registry.ProtocolPlugin.ground_truth`, a mapping of
arrays; its docstring there lists the keys); a plugin without that hook saves
none. Per-party arrays are keyed ``kind/<party>``; :func:`members_truth` and
:func:`owners_data` are the helpers several protocols' builders share.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.errors import DataError
from ppknn.simulations import registry

Truth = dict[str, np.ndarray]


def owners_data(outcome: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each party's training rows ``(X, y)``, from the construction arguments of its spec."""
    out = {}
    for spec in outcome.plan.specs:
        kw = spec.kwargs
        if "X" in kw and "y" in kw:
            out[spec.party_id] = (np.asarray(kw["X"]), np.asarray(kw["y"]))
    return out


def members_truth(data: Any, plan: Any, protocol: str) -> Truth:
    """Membership ground truth: the union's rows, the query rows and matched picks of both."""
    from ppknn.simulations.sampling import matched_sample

    members_y = np.asarray(data.train_y, dtype=np.int64)
    others_y = np.asarray(plan.query_labels, dtype=np.int64)
    pick_in, pick_out = matched_sample(members_y, others_y,
                                       data.policy.generator("membership-sample", protocol))
    return {"members_X": np.asarray(data.train_X, dtype=np.float64), "members_y": members_y,
            "others_X": np.asarray(plan.queries, dtype=np.float64), "others_y": others_y,
            "members_pick": pick_in, "others_pick": pick_out}


def has_truth(protocol: str) -> bool:
    """Whether ``protocol``'s plugin saves ground truth (its ``ground_truth`` hook)."""
    plugin = registry.find(protocol)
    return plugin is not None and plugin.has_ground_truth()


def truth_of(outcome: Any, data: Any) -> Truth:
    """The ground truth of one protocol's outcome (empty when its plugin has none)."""
    plugin = registry.find(outcome.name)
    truth = plugin.ground_truth(outcome, data) if plugin is not None else None
    return dict(truth) if truth is not None else {}


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


__all__ = ["Truth", "has_truth", "load_truth", "members_truth", "owners_data", "save_truth",
           "truth_of", "truth_path"]
