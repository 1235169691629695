"""IBM diffprivlib's GaussianNB side by side, in a separate virtual environment (experiments).

diffprivlib needs scikit-learn < 1.7 while ppknn runs on a newer one, so it
never enters ppknn's dependencies: :func:`ensure_venv` makes (once, with
``python -m venv`` and pip) or finds ``~/.cache/ppknn/diffprivlib-venv``, and
:func:`run_diffprivlib` runs :data:`SCRIPT` there on the *same* folds, bounds
and ε values, returning one row per (dataset, repetition, fold, ε) with the
accuracy, the fit time (``seconds``) and the predict time
(``predict_seconds``). Nothing here raises when diffprivlib cannot be
installed or run: the functions return ``None`` and a message that says why.

diffprivlib's GaussianNB spends ε/3 on noisy class counts, ε/3 on the
means and ε/3 on the variances (each split over the features), with noisy
sums divided by the noisy counts (add/remove neighbouring).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ppknn_reproductions.experiments import peer_env

VENV = Path(os.environ.get("PPKNN_DIFFPRIVLIB_VENV",
                           Path.home() / ".cache" / "ppknn" / "diffprivlib-venv"))
REQUIREMENTS = ("diffprivlib", "scikit-learn<1.7")

SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
import diffprivlib
from diffprivlib.models import GaussianNB
warnings.simplefilter("ignore")
job = json.load(open(sys.argv[1]))
out = []
for ds in job["datasets"]:
    data = np.load(ds["npz"])
    X, y = data["X"], data["y"]
    for split in ds["splits"]:
        tr, te = np.asarray(split["train"]), np.asarray(split["test"])
        bounds = (np.asarray(split.get("lower", ds["lower"])),
                  np.asarray(split.get("upper", ds["upper"])))
        for k, eps in enumerate(job["epsilons"]):
            seed = int(split["seed"]) * 1000 + k
            clf = GaussianNB(epsilon=eps, bounds=bounds, random_state=seed)
            t0 = time.perf_counter()
            clf.fit(X[tr], y[tr])
            sec = time.perf_counter() - t0
            t0 = time.perf_counter()
            pred = clf.predict(np.clip(X[te], *bounds))
            sec_pred = time.perf_counter() - t0
            acc = float(np.mean(pred == y[te]))
            out.append(dict(dataset=ds["name"], repetition=split["repetition"],
                            fold=split["fold"], epsilon=eps, accuracy=acc, seconds=sec,
                            predict_seconds=sec_pred))
json.dump({"version": diffprivlib.__version__, "rows": out}, open(sys.argv[2], "w"))
"""


def ensure_venv(*, create: bool, venv: Path = VENV) -> tuple[Path | None, str]:
    """``(python of the venv, message)``; creates the venv when asked and missing."""
    python, _, message = peer_env.ensure(
        venv, REQUIREMENTS, ("diffprivlib",), create=create, what="diffprivlib",
        how="python benchmarks/bench_dp_nb.py --diffprivlib")
    return python, message


def _split(sp: tuple) -> dict:
    r, f, tr, te = sp[:4]
    out = {"repetition": r, "fold": f, "seed": 100 * r + f,
           "train": [int(v) for v in tr], "test": [int(v) for v in te]}
    if len(sp) == 6:
        out["lower"] = [float(v) for v in sp[4]]
        out["upper"] = [float(v) for v in sp[5]]
    return out


def run_diffprivlib(python: Path, jobs: list[dict], epsilons: list[float]
                    ) -> tuple[list[dict] | None, str]:
    """Run GaussianNB on every job's splits; ``(rows, message)`` (``rows`` None on failure).

    A job is ``dict(name, X, y, lower, upper, splits=[(repetition, fold, train, test)])``;
    a split may carry its own bounds as ``(repetition, fold, train, test, lower, upper)``
    (e.g. the fold's training range). Held-out rows are clipped to the bounds.
    """
    with tempfile.TemporaryDirectory(prefix="ppknn-dpl-") as tmp:
        entries: list[dict] = []
        spec = {"epsilons": [float(e) for e in epsilons], "datasets": entries}
        for i, job in enumerate(jobs):
            npz = Path(tmp) / f"data{i}.npz"
            np.savez(npz, X=np.asarray(job["X"], dtype=np.float64), y=np.asarray(job["y"]))
            entries.append({
                "name": job["name"], "npz": str(npz),
                "lower": [float(v) for v in job["lower"]],
                "upper": [float(v) for v in job["upper"]],
                "splits": [_split(sp) for sp in job["splits"]]})
        (Path(tmp) / "job.json").write_text(json.dumps(spec))
        (Path(tmp) / "run.py").write_text(SCRIPT)
        try:
            proc = subprocess.run([str(python), str(Path(tmp) / "run.py"),
                                   str(Path(tmp) / "job.json"), str(Path(tmp) / "out.json")],
                                  capture_output=True, text=True, timeout=3600)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"diffprivlib run failed: {exc}"
        if proc.returncode != 0:
            return None, f"diffprivlib run failed: {proc.stderr[-800:]}"
        result = json.loads((Path(tmp) / "out.json").read_text())
    return result["rows"], f"diffprivlib {result['version']}"


__all__ = ["REQUIREMENTS", "SCRIPT", "VENV", "ensure_venv", "run_diffprivlib"]
