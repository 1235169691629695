"""One repetition of the paper's experiments, through parties and the transcript.

:func:`run_session` hosts a sanitizer (the training split) and a miner (the
test split) on a fresh runtime, runs every job (one release per round),
closes the transcript, then reads **the miner's view of each round from the
transcript** and runs the attacks on it. Accuracy is scored against the
test labels and privacy against the sanitizer's normalised rows; both are
simulation-only ground truth that no party logic reads.

For ``pca-laplace`` releases the session also measures the distortion
``D = d'^2 - d^2`` over (noisy training row, clean test row) pairs, to set
beside eqs. (12)-(13).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppknn.core.data import DomainBounds
from ppknn.core.messages import Message, decode_arrays
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import PartySpec, RunContext, Runtime
from ppknn.core.transcript import Transcript, View
from ppknn.protocols.pca_perturbation.attacks import (
    AttackOutcome,
    attack,
    measured_distortion,
    release_message,
)
from ppknn.protocols.pca_perturbation.driver import run_releases
from ppknn.protocols.pca_perturbation.parties.miner import Miner
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.protocol import PROTOCOL, MinerOutput, MiningPlan
from ppknn.protocols.pca_perturbation.sanitize import normalise
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest

SANITIZER, MINER = "sanitizer", "miner"
_HEADER = ("run_id", "protocol", "round", "seq", "sender", "receiver", "kind")


@dataclass(frozen=True, kw_only=True)
class Split:
    """Training rows for the sanitizer, test rows for the miner, and the public bounds."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    bounds: DomainBounds


@dataclass(frozen=True, kw_only=True)
class Job:
    """One release: what to release, how the miner classifies, whether to attack it."""

    request: ReleaseRequest
    plan: MiningPlan | None = None
    attack: bool = False


@dataclass(frozen=True, kw_only=True)
class ReleaseResult:
    """Measured outcome of one release.

    Attributes
    ----------
    request:
        The release.
    accuracy:
        Per classification method, the fraction of test rows right.
    output:
        The miner's output (radius, chosen k, ...), ``None`` if not classified.
    attack:
        Average privacy under the attacks, ``None`` if not attacked.
    amplification:
        The per-column amplification published in the release (Laplace schemes).
    stats:
        ``(E(D), Var(D))`` published in the release (PCA and Laplace schemes).
    measured:
        ``(mean, variance)`` of the distortion over (noisy training, clean test) pairs.
    noise_to_signal:
        Laplace schemes: ``(min, median)`` over the released columns of the noise
        variance ``2 b_i^2`` over the column's variance (ground truth). Where it
        exceeds 1, dropping the column lowers an attacker's squared error.
    """

    request: ReleaseRequest
    accuracy: dict[str, float]
    output: MinerOutput | None
    attack: AttackOutcome | None
    amplification: np.ndarray | None
    stats: tuple[float, float] | None
    measured: tuple[float, float] | None
    noise_to_signal: tuple[float, float] | None = None


class RoundReader:
    """Reads one round's messages from a transcript without decoding the other rounds.

    An index of (part, round) is built once from three small columns; a view
    then reads only the Parquet parts holding its round.
    """

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.index: dict[int, list[Path]] = {}
        for part in transcript.parts():
            rounds = pq.read_table(part, columns=["round"])["round"].to_pylist()
            for r in set(rounds):
                self.index.setdefault(int(r), []).append(part)

    def _tables(self, round: int):
        if self.transcript.directory is None:  # in-memory transcript: scan it
            yield from self.transcript.iter_tables()
        else:
            for part in self.index.get(round, []):
                yield pq.read_table(part)

    def view(self, party: str, round: int) -> View:
        """The view of ``party`` restricted to ``round`` of the protocol."""
        messages = []
        for table in self._tables(round):
            mask = pc.and_(pc.and_(pc.equal(table["round"], round),
                                   pc.equal(table["protocol"], PROTOCOL)),
                           pc.equal(table["receiver"], party))
            for row in table.filter(mask).to_pylist():
                messages.append(Message(**{c: row[c] for c in _HEADER},
                                        payload=decode_arrays(row["payload"])))
        return View.of(messages, party)


def miner_view(transcript: Transcript, party: str, round: int) -> View:
    """The view of ``party`` restricted to one round of the protocol."""
    return RoundReader(transcript).view(party, round)


def run_session(split: Split, jobs: Sequence[Job], *, make_runtime: Callable[[], Runtime],
                seed: int, run_id: str, workdir: Path | None = None) -> list[ReleaseResult]:
    """Run ``jobs`` on a fresh runtime and measure each release (see module docstring)."""
    specs = [
        PartySpec(SANITIZER, Sanitizer, {"party_id": SANITIZER, "index": 0, "X": split.X_train,
                                         "y": split.y_train, "n_classes": split.n_classes,
                                         "run_id": run_id, "bounds": split.bounds,
                                         "miner": MINER, "seed": seed}),
        PartySpec(MINER, Miner, {"party_id": MINER, "index": 1, "X": split.X_test,
                                 "n_classes": split.n_classes, "run_id": run_id, "seed": seed}),
    ]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rt = make_runtime()
        try:
            # one record per Parquet part: reading a round's view touches one part only
            rt.start(specs, RunContext(run_id=run_id, transcript_dir=Path(tmp),
                                       record_batch=1, flush_every=1))
            outputs = run_releases(rt, [(j.request, j.plan) for j in jobs],
                                   sanitizer=SANITIZER, miner=MINER)
            rt.close_transcript()
            Z_train = rt.state(SANITIZER, "Z")
            private = rt.state(SANITIZER, "private")
            variances = rt.state(SANITIZER, "fit").variances
        finally:
            rt.shutdown()
        reader = RoundReader(Transcript(Path(tmp)))
        Zq = np.clip(normalise(split.X_test, split.bounds.lower, split.bounds.upper), 0.0, 1.0)
        results = []
        for job, out in zip(jobs, outputs):
            r = job.request.round
            release = release_message(reader.view(MINER, r), r)
            p = release.payload
            arng = SeedPolicy(root=seed).generator("attack", r)
            outcome = attack(release, Z_train) if job.attack else None
            measured = measured_distortion(release, Z_train, Zq, rng=arng) \
                if job.request.scheme == "pca-laplace" else None
            ratio = None
            if job.request.scheme in ("pca-laplace", "laplace"):
                scales = private[r]["scales"]
                signal = variances[: len(scales)] if job.request.scheme == "pca-laplace" \
                    else Z_train.var(axis=0)
                q = 2.0 * scales**2 / signal
                ratio = (float(q.min()), float(np.median(q)))
            acc = {} if out is None else {
                m: float(np.mean(pred == split.y_test)) for m, pred in out.predictions.items()}
            results.append(ReleaseResult(
                request=job.request, accuracy=acc, output=out, attack=outcome,
                amplification=np.asarray(p["amplification"]) if "amplification" in p else None,
                stats=(float(p["stats"][0]), float(p["stats"][1])) if "stats" in p else None,
                measured=measured, noise_to_signal=ratio))
    return results


__all__ = ["Job", "ReleaseResult", "RoundReader", "Split", "measured_distortion", "miner_view",
           "run_session"]
