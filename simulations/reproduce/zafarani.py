"""Reproduction of Zafarani & Clifton (DP Naive Bayes, smooth sensitivity): ``ppknn reproduce``.

Experiments (each writes a CSV and a PNG into ``output``; the PNGs are copied
to ``<report stem>/`` next to the Markdown report, whose numbers all come
from this run):

- accuracy against ε on adult, glass and seeds (Figs. 4, 6, 7): repetitions
  of stratified k-fold cross-validation, mean and standard deviation, for the
  smooth-sensitivity model (the paper's replace-one neighbouring, the proven
  calibration), the same with add/remove neighbouring, with the paper's
  √2·S/ε' constant, the (ε, δ) variants, Vaidya et al., Bun-Steinke,
  non-private Naive Bayes and the majority class;
- smooth against Vaidya, paired over folds, at every ε;
- IBM diffprivlib's GaussianNB on the same folds (full run, when its
  environment exists: ``python benchmarks/bench_dp_nb.py --diffprivlib``);
- bounds wider than the data (the paper's structural-bounds argument);
- training time against size on synthetic bounded data up to 10^6 rows (Fig. 13);
- the exact privacy loss of one released mean and the DP core's auditor;
- the model-release service on the chosen runtime (owner, ledger, analysts).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from core.errors import BudgetExhausted  # noqa: E402
from core.rng import SeedPolicy  # noqa: E402
from core.runtime import RunContext, make_runtime  # noqa: E402
from parties.specs import nb_owner_spec as owner_spec  # noqa: E402
from parties.specs import nb_requester_spec as requester_spec  # noqa: E402
from protocols.dp_nb.audit import audit_mean, worst_pair  # noqa: E402
from protocols.dp_nb.datasets import (  # noqa: E402
    PAPER_DATASETS,
    UNAVAILABLE,
    NBDataset,
    load_nb_dataset,
    synthetic_bounded,
)
from protocols.dp_nb.driver import ask  # noqa: E402
from protocols.dp_nb.external import ensure_venv, run_diffprivlib  # noqa: E402
from protocols.dp_nb.noise import SmoothCalibration  # noqa: E402
from protocols.dp_nb.protocol import ModelRequest  # noqa: E402
from protocols.dp_nb.training import AUTO_FRACTION, AUTO_RATIO  # noqa: E402
from simulations.experiments.dp_nb import (  # noqa: E402
    MethodSpec,
    cross_validate,
    encode,
    paired_difference,
    summarise,
    time_training,
)
from simulations.reproduce.table import write_rows_csv  # noqa: E402

SEED = 2020
SMOOTH = "smooth"
METHODS = (
    MethodSpec(SMOOTH, "smooth", neighbours="replace"),
    MethodSpec("smooth, add/remove", "smooth"),
    MethodSpec("smooth, paper constant", "smooth", noise="paper", neighbours="replace"),
    MethodSpec("smooth, Laplace δ=1/n", "smooth", noise="laplace", delta="1/n",
               neighbours="replace"),
    MethodSpec("smooth, Gaussian δ=1/n", "smooth", noise="gaussian", delta="1/n",
               neighbours="replace"),
    MethodSpec("smooth, Gaussian δ=1/n²", "smooth", noise="gaussian", delta="1/n^2",
               neighbours="replace"),
    MethodSpec("vaidya", "vaidya"),
    MethodSpec("bun-steinke", "bun-steinke", neighbours="replace"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of the reproduction (full and quick)."""

    repetitions: int
    folds: int
    epsilons: tuple[float, ...]
    adult_rows: int | None
    sizes: tuple[int, ...]
    timing_repeats: int
    direct_max: int
    audit_trials: int
    audit_samples: int
    diffprivlib: bool
    bounds_factors: tuple[float, ...]


FULL = Settings(5, 10, (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0), None,
                (1_000, 10_000, 100_000, 1_000_000), 3, 100_000, 400, 1_000_000, True,
                (1.0, 2.0, 5.0, 10.0))
QUICK = Settings(1, 3, (0.1, 1.0, 10.0), 6_000, (1_000, 10_000, 100_000), 1, 10_000, 40,
                 100_000, False, (1.0, 5.0))
SMALL_EPS = 0.1
"""ε at or below which the paper's "smooth beats Vaidya at small ε" is checked."""


# ------------------------------------------------------------------------- experiments
def _datasets(s: Settings) -> dict[str, NBDataset]:
    out = {}
    for name in PAPER_DATASETS:
        ds = load_nb_dataset(name)
        if name == "adult" and s.adult_rows is not None:
            keep = np.sort(SeedPolicy(root=SEED).generator("subsample").permutation(
                len(ds.y))[:s.adult_rows])
            ds = ds.subset(keep)
        out[name] = ds
    return out


def accuracy(s: Settings, data: dict[str, NBDataset]) -> list[dict]:
    """Every (dataset, repetition, fold, method, ε) accuracy."""
    rows = []
    for ds in data.values():
        rows += cross_validate(ds, METHODS, s.epsilons, repetitions=s.repetitions,
                               folds=s.folds, seed=SEED)
    return rows


def _splits(ds: NBDataset, s: Settings) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """The folds :func:`cross_validate` uses (same seeds), for diffprivlib."""
    import warnings

    from sklearn.model_selection import StratifiedKFold

    policy = SeedPolicy(root=SEED)
    out = []
    for rep in range(s.repetitions):
        seed = int(policy.generator("folds", ds.name, rep).integers(2**31))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The least populated class")
            for f, (tr, te) in enumerate(StratifiedKFold(s.folds, shuffle=True,
                                                         random_state=seed).split(ds.X, ds.y)):
                out.append((rep, f, tr, te))
    return out


def diffprivlib_side_by_side(s: Settings, data: dict[str, NBDataset], runs: list[dict]
                             ) -> tuple[list[dict], str]:
    """IBM diffprivlib's GaussianNB and ours on the numeric features, same folds and bounds."""
    if not s.diffprivlib:
        return [], "not run in --quick mode"
    python, message = ensure_venv(create=False)
    if python is None:
        return [], message
    numeric = [data["adult"].numeric_only(), data["glass"], data["seeds"]]
    eps = [e for e in (0.1, 1.0, 10.0) if e in s.epsilons] or list(s.epsilons)
    jobs = [dict(name=ds.name, X=ds.X, y=ds.y, lower=ds.lower, upper=ds.upper,
                 splits=_splits(ds, s)) for ds in numeric]
    dpl, message = run_diffprivlib(python, jobs, eps)
    if dpl is None:
        return [], message
    ours = cross_validate(numeric[0], [m for m in METHODS if m.label in (SMOOTH, "vaidya")], eps,
                          repetitions=s.repetitions, folds=s.folds, seed=SEED)
    same = [r for r in runs if r["dataset"] in ("glass", "seeds") and r["epsilon"] in eps
            and r["method"] in (SMOOTH, "vaidya", "non-private", "majority")]
    return [dict(r, method="diffprivlib GaussianNB") for r in dpl] + ours + same, message


def widened_bounds(s: Settings, data: dict[str, NBDataset]) -> list[dict]:
    """Accuracy at ε = 1 when the declared bounds are f times wider than the data's range.

    The variance floor is held at the same absolute value for every f (a public
    10⁻³ of the data range squared), so only the sensitivities change.
    """
    rows = []
    for ds in (data["seeds"], data["adult"].numeric_only()):
        for f in s.bounds_factors:
            extra = (f - 1.0) * (ds.upper - ds.lower) / 2  # f = 1: exactly the data's range
            wide = NBDataset(ds.name, ds.X, ds.y, ds.classes, ds.feature_names, {}, {},
                             ds.lower - extra, ds.upper + extra, f"data range x {f}")
            specs = [dataclasses.replace(m, var_floor=1e-3 / f**2) for m in METHODS
                     if m.label in (SMOOTH, "vaidya")]
            for r in cross_validate(wide, specs, [1.0], repetitions=s.repetitions,
                                    folds=s.folds, seed=SEED):
                if r["method"] in (SMOOTH, "vaidya"):
                    rows.append(dict(r, factor=f))
    return rows


def runtime_figure(s: Settings) -> list[dict]:
    """Fig. 13: training seconds against size (best of the repeats, side by side)."""
    rows = []
    for n in s.sizes:
        rows += time_training(synthetic_bounded(n, seed=SEED), epsilon=1.0,
                              repeats=s.timing_repeats, seed=SEED, direct=n <= s.direct_max)
    return rows


def privacy_audit(s: Settings) -> list[dict]:
    """Exact loss and auditor bound of one mean release, on the worst pair found."""
    rows = []
    for noise in ("polynomial", "cauchy", "paper"):
        for neighbours in ("replace", "add-remove"):
            cal = SmoothCalibration(noise=noise, epsilon=0.5)
            gen = SeedPolicy(root=SEED).generator("audit", noise, neighbours)
            x, y, _ = worst_pair(cal, rng=gen, trials=s.audit_trials, trim=2, max_n=8,
                                 neighbours=neighbours)
            res = audit_mean(x, y, cal, trim=2, lower=0.0, upper=10.0,
                             n_samples=s.audit_samples, rng=gen, neighbours=neighbours)
            rows.append(dict(noise=noise, neighbours=neighbours, claimed=res.claimed,
                             exact=res.exact, audited=res.audited.eps_lower,
                             confidence=res.audited.confidence, proven=res.proven,
                             x=" ".join(f"{v:g}" for v in x), y=" ".join(f"{v:g}" for v in y)))
    return rows


def service(runtime_kind: str, data: dict[str, NBDataset]) -> dict:
    """An NB owner on ``runtime_kind`` serving three analysts; ledger and accuracy."""
    ds = data["adult"]
    gen = SeedPolicy(root=SEED).generator("service")
    perm = gen.permutation(len(ds.y))
    tr, te = perm[: int(0.8 * len(perm))], perm[int(0.8 * len(perm)):]
    numeric, categorical, schema = encode(ds)
    cats = {c: list(v) for c, v in ds.categories.items()}
    rt = make_runtime(runtime_kind)
    specs = [owner_spec(party_id="owner", X=ds.X[tr], y=ds.classes[ds.y[tr]], classes=ds.classes,
                        bounds=ds.bounds, categories=cats, epsilon=2.0, run_id="zafarani",
                        seed=SEED)]
    specs += [requester_spec(party_id=a, owner="owner", run_id="zafarani", classes=ds.classes,
                             schema=schema, index=i + 1) for i, a in enumerate(("a1", "a2", "a3"))]
    t0 = time.perf_counter()
    try:
        rt.start(specs, RunContext(run_id="zafarani"))
        reqs = [("a1", "owner", ModelRequest(epsilon=1.0, neighbours="replace")),
                ("a2", "owner", ModelRequest(epsilon=0.5, method="vaidya")),
                ("a3", "owner", ModelRequest(epsilon=0.5, neighbours="replace"))]
        models = ask(rt, reqs)
        refused = ""
        try:
            ask(rt, [("a1", "owner", ModelRequest(epsilon=0.5))], first_round=10)
        except Exception as exc:  # noqa: BLE001 - reported (Ray wraps the party's error)
            refused = ("BudgetExhausted" if isinstance(exc, BudgetExhausted)
                       else type(exc).__name__)
        remaining = rt.state("owner", "remaining_budget").epsilon
        entries = rt.state("owner", "ledger_entries")
    finally:
        rt.shutdown()
    accs = [float(np.mean(m.predict(ds.X[te]) == ds.classes[ds.y[te]])) for m in models]
    return dict(runtime=runtime_kind, models=len(models), accuracies=accs, remaining=remaining,
                ledger_entries=entries, fourth_request=refused,
                seconds=time.perf_counter() - t0)


# ----------------------------------------------------------------------------- output
write_csv = write_rows_csv


def _plot_accuracy(summary: list[dict], dataset: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for label in [m.label for m in METHODS] + ["non-private", "majority"]:
        pts = sorted((r["epsilon"], r["mean"], r["std"]) for r in summary
                     if r["dataset"] == dataset and r["method"] == label)
        if not pts:
            continue
        e, m, sd = (np.array(v) for v in zip(*pts, strict=True))
        style = "--" if label in ("non-private", "majority") else "-o"
        ax.errorbar(e, m, yerr=sd, fmt=style, ms=3, capsize=2, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("total ε")
    ax.set_ylabel("accuracy (mean ± sd over folds)")
    ax.set_title(f"Accuracy against ε: {dataset}")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_groups(rows: list[dict], x: str, group: str, path: Path, title: str, xlabel: str,
                 ylabel: str, value: str = "accuracy", logy: bool = False,
                 panels: str | None = "dataset") -> None:
    key = (lambda r: r[panels]) if panels else (lambda r: "")
    names = sorted({key(r) for r in rows})
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        cell: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in rows:
            if key(r) == name:
                cell[r[group]][r[x]].append(r[value])
        for g, pts in sorted(cell.items()):
            xs = sorted(pts)
            ax.errorbar(xs, [np.mean(pts[v]) for v in xs],
                        yerr=[np.std(pts[v]) for v in xs], fmt="-o", ms=3, capsize=2, label=g)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_title(str(name))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_audit(rows: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7.5, 4))
    labels = [f"{r['noise']}\n{r['neighbours']}" for r in rows]
    idx = np.arange(len(rows))
    ax.bar(idx - 0.2, [r["exact"] / r["claimed"] for r in rows], 0.4, label="exact loss / ε")
    ax.bar(idx + 0.2, [r["audited"] / r["claimed"] for r in rows], 0.4,
           label="auditor's lower bound / ε")
    ax.axhline(1.0, color="k", lw=1, ls="--", label="claimed ε")
    ax.set_xticks(idx, labels, fontsize=8)
    ax.set_ylabel("privacy loss / claimed ε")
    ax.set_title("One released trimmed mean, worst neighbouring pair found")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(output: Path, *, quick: bool, runtime: str, report: Path,
        log: Callable[[str], None] | None = None) -> Path:
    """Run everything; write CSVs, PNGs and the report; return the report's path.

    ``log`` (optional) receives one line per experiment as it starts.
    """
    s = QUICK if quick else FULL
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    figdir = Path(report).parent / Path(report).stem
    figdir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t_all = time.perf_counter()

    def timed(name, fn, *args):
        if log is not None:
            log(f"{name} ...")
        t0 = time.perf_counter()
        out = fn(*args)
        timings[name] = time.perf_counter() - t0
        return out

    data = timed("load", _datasets, s)
    runs = timed("accuracy", accuracy, s, data)
    summary = summarise(runs)
    paired = paired_difference(runs, SMOOTH, "vaidya")
    paired += paired_difference(runs, "smooth, paper constant", "vaidya")
    paired += paired_difference(runs, "smooth, Gaussian δ=1/n", SMOOTH)
    paired += paired_difference(runs, "bun-steinke", SMOOTH)
    dpl_rows, dpl_message = timed("diffprivlib", diffprivlib_side_by_side, s, data, runs)
    bounds_rows = timed("bounds", widened_bounds, s, data)
    time_rows = timed("runtime", runtime_figure, s)
    audit_rows = timed("audit", privacy_audit, s)
    svc = timed("service", service, runtime, data)

    pngs = []
    write_csv(output / "accuracy_runs.csv", runs)
    for name in data:
        rows = [r for r in summary if r["dataset"] == name]
        write_csv(output / f"accuracy_{name}.csv", rows)
        _plot_accuracy(summary, name, output / f"accuracy_{name}.png")
        pngs.append(output / f"accuracy_{name}.png")
    write_csv(output / "paired_differences.csv", paired)
    if dpl_rows:
        write_csv(output / "diffprivlib.csv", dpl_rows)
        _plot_groups(dpl_rows, "epsilon", "method", output / "diffprivlib.png",
                     "diffprivlib GaussianNB beside ours (numeric features, same folds)",
                     "total ε", "accuracy")
        pngs.append(output / "diffprivlib.png")
    write_csv(output / "bounds.csv", bounds_rows)
    _plot_groups(bounds_rows, "factor", "method", output / "bounds.png",
                 "Accuracy at ε = 1 with bounds wider than the data",
                 "bounds width / data range", "accuracy")
    pngs.append(output / "bounds.png")
    write_csv(output / "runtime.csv", time_rows)
    _plot_groups(time_rows, "n", "version", output / "runtime.png",
                 "Training time against size (Fig. 13), 6 bounded features", "rows",
                 "seconds (best of repeats)", value="seconds", logy=True, panels=None)
    pngs.append(output / "runtime.png")
    write_csv(output / "audit.csv", audit_rows)
    _plot_audit(audit_rows, output / "audit.png")
    pngs.append(output / "audit.png")
    for png in pngs:
        shutil.copy(png, figdir / png.name)
    timings["total"] = time.perf_counter() - t_all
    meta = {"quick": quick, "runtime": runtime, "settings": asdict(s), "seconds": timings,
            "service": svc, "diffprivlib": dpl_message, "unavailable": UNAVAILABLE,
            "trim": {"ratio": AUTO_RATIO, "fraction": AUTO_FRACTION}}
    (output / "run.json").write_text(json.dumps(meta, indent=1, default=str))
    return write_report(Path(report), figdir.name, s, data, summary, paired, dpl_rows,
                        dpl_message, bounds_rows, time_rows, audit_rows, svc, meta,
                        small_eps=SMALL_EPS, methods=[m.label for m in METHODS])


# ----------------------------------------------------------------------------- report
def _pm(mean: float, sd: float) -> str:
    return f"{mean:.3f} ± {sd:.3f}"


def _eps(e: float) -> str:
    return f"{e:g}"


def _verdict(rows: list[dict]) -> str:
    """Where A − B is significantly positive / negative (2·SE), and where it is not."""
    if not rows:
        return "not measured"
    groups = (("better", [r for r in rows if r["mean_difference"] - r["two_se"] > 0]),
              ("worse", [r for r in rows if r["mean_difference"] + r["two_se"] < 0]))
    flagged = {id(r) for _, g in groups for r in g}
    parts = [f"{word} at ε = " + ", ".join(_eps(r["epsilon"]) for r in g)
             for word, g in groups if g]
    rest = [r for r in rows if id(r) not in flagged]
    if rest:
        parts.append("no significant difference at ε = "
                     + ", ".join(_eps(r["epsilon"]) for r in rest))
    return "; ".join(parts)


def _diff_text(rows: list[dict]) -> str:
    return ", ".join(f"ε={_eps(r['epsilon'])}: {r['mean_difference']:+.3f} ± {r['two_se']:.3f}"
                     for r in rows)


def _accuracy_table(summary: list[dict], dataset: str, methods: list[str],
                    epsilons: tuple[float, ...]) -> list[str]:
    cell = {(r["method"], r["epsilon"]): r for r in summary if r["dataset"] == dataset}
    lines = ["| method | " + " | ".join(f"ε={_eps(e)}" for e in epsilons) + " |",
             "| --- |" + " --- |" * len(epsilons)]
    for m in methods + ["non-private", "majority"]:
        if (m, epsilons[0]) in cell:
            lines.append(f"| {m} | " + " | ".join(_pm(cell[(m, e)]["mean"], cell[(m, e)]["std"])
                                                  for e in epsilons) + " |")
    return lines


def write_report(path: Path, figdir: str, s: Settings, data: dict[str, NBDataset],
                 summary: list[dict], paired: list[dict], dpl_rows: list[dict], dpl_message: str,
                 bounds_rows: list[dict], time_rows: list[dict], audit_rows: list[dict],
                 svc: dict, meta: dict, *, small_eps: float, methods: list[str]) -> Path:
    """The Markdown report: the paper's claims beside this run's numbers."""
    eps = s.epsilons
    small = [e for e in eps if e <= small_eps]
    pair = defaultdict(list)
    for r in paired:
        pair[(r["a"], r["b"], r["dataset"])].append(r)
    L: list[str] = []
    w = L.append
    w("# Zafarani & Clifton: differentially private Naive Bayes with smooth sensitivity")
    w("")
    w(f"Generated by `ppknn reproduce zafarani{' --quick' if meta['quick'] else ''}` "
      f"(runtime `{meta['runtime']}`) in {meta['seconds']['total']:.0f} s. Every number below "
      "comes from that run; do not edit by hand.")
    w("")
    w("## Setting")
    w("")
    for name, ds in data.items():
        w(f"- **{name}**: {len(ds.y)} rows, {len(ds.numeric)} numeric and {len(ds.categories)} "
          f"categorical features, {len(ds.classes)} classes; bounds: {ds.bounds_source}.")
    w("- Not available offline, so not reproduced: " + "; ".join(
        f"{k} ({v})" for k, v in UNAVAILABLE.items()) + " (Figs. 5, 8-12).")
    w(f"- Protocol (§7.2): {s.repetitions} repetition(s) of stratified {s.folds}-fold "
      "cross-validation; mean ± standard deviation over the (repetition, fold) accuracies; the "
      "noise of every fit comes from its own stream of one root seed.")
    w("- Budget (Algorithm 1, lines 1-3): ε' = ε / (2·numeric + categorical + 1); class counts "
      "and category tables get Laplace(1/ε'), each numeric feature a mean and a variance at ε' "
      "(per-class releases compose in parallel). ε on the x-axis is the total.")
    w("- `smooth` is the paper's method as its analysis assumes: **replace-one neighbouring "
      "with public class sizes** (one record's values change within its class; Vaidya et al.'s "
      "(U−L)/(n+1) makes the same assumption), with the **proven calibration**: noise ∝ "
      "1/(1+|z|⁴), β = ε'/10, scale 10·S/ε'. `smooth, add/remove` protects class sizes too "
      "(add or remove one record). `smooth, paper constant` is Algorithm 1 verbatim: Cauchy "
      "noise of scale √2·S/ε' with S computed at β = ε' (§3.1's e^(−kε)), which is not a proven "
      "calibration. The (ε, δ) variants use NRS Lemma 2.10's Laplace / Gaussian constants, "
      "δ = 1/n or 1/n² of the training size.")
    w(f"- Trimming (Definition 4.1; the paper gives no amount): m = min(⌈ln {AUTO_RATIO:g} / "
      f"(2β)⌉, ⌊{AUTO_FRACTION:g}·n_c⌋) per class, chosen on synthetic Gaussian data, not on "
      "these datasets. Released variances are floored at 10⁻³·(U−L)² (the paper clips them at "
      "zero, which makes a Gaussian degenerate).")
    w("")
    w("## The paper's claims beside this run")
    w("")
    w("| # | the paper says | measured here |")
    w("| --- | --- | --- |")
    names = list(data)
    rows_small = {n: [r for r in pair[(SMOOTH, "vaidya", n)] if r["epsilon"] in small]
                  for n in names}
    w("| 1 | Smooth sensitivity significantly improves accuracy over Vaidya et al.'s global "
      "sensitivity, particularly on human data (adult) | at ε ≤ " f"{_eps(small_eps)}: "
      + "; ".join(f"{n}: {_verdict(rows_small[n])} ({_diff_text(rows_small[n])})"
                  for n in names) + " |")
    w("| 1b | (the same, over the whole ε range) | smooth − Vaidya, paired: " + "; ".join(
        f"{n}: {_verdict(pair[(SMOOTH, 'vaidya', n)])}" for n in names)
      + " (values in the paired table) |")
    gauss = {n: [r for r in pair[("smooth, Gaussian δ=1/n", SMOOTH, n)] if r["epsilon"] == 1.0]
             for n in names}
    w("| 2 | (ε, δ)-DP with Gaussian noise gives some accuracy improvement | Gaussian δ=1/n "
      "minus smooth at ε = 1: " + "; ".join(f"{n}: {_diff_text(gauss[n])}" for n in names)
      + " |")
    bs = {n: [r for r in pair[("bun-steinke", SMOOTH, n)] if r["epsilon"] == 1.0] for n in names}
    w("| 3 | Bun-Steinke's mean estimation (variance as E[X²]−E[X]²) is less accurate | "
      "Bun-Steinke minus smooth at ε = 1: " + "; ".join(f"{n}: {_diff_text(bs[n])}"
                                                         for n in names) + " |")
    paper_audit = [r for r in audit_rows if r["noise"] == "paper"]
    proven_audit = [r for r in audit_rows if r["noise"] != "paper"]
    w("| 4 | Algorithm 1 (Cauchy, √2·s/ε') is ε-DP (Theorem 9) | one mean release at ε = "
      f"{audit_rows[0]['claimed']:g}, worst pair found: paper constant exact loss "
      + ", ".join(f"{r['exact'] / r['claimed']:.3f}·ε ({r['neighbours']})" for r in paper_audit)
      + ", auditor lower bound " + ", ".join(f"{r['audited'] / r['claimed']:.3f}·ε"
                                             for r in paper_audit)
      + "; proven calibrations: exact ≤ "
      + f"{max(r['exact'] / r['claimed'] for r in proven_audit):.3f}·ε |")
    tt = {(r["n"], r["version"]): r["seconds"] for r in time_rows}
    ratio = ", ".join(f"n={n:,}: {tt[(n, 'smooth')] / tt[(n, 'global (vaidya)')]:.2f}×"
                      for n in s.sizes)
    w("| 5 | Smooth is O(n²), global O(n log n); about an order of magnitude slower at 5,000 "
      "rows, half an order at over a million (Fig. 13) | smooth / global training time: "
      + ratio + " |")
    w("| 6 | Mushroom is categorical only, so all methods coincide there (Fig. 5) | not "
      "available offline |")
    w("")
    for name in names:
        w(f"## Accuracy against ε: {name}")
        w("")
        w(f"![accuracy {name}]({figdir}/accuracy_{name}.png)")
        w("")
        L.extend(_accuracy_table(summary, name, methods, eps))
        w("")
    w("## Smooth against the others, paired over folds")
    w("")
    w("Mean accuracy difference over the same (repetition, fold) pairs, ± 2 standard errors.")
    w("")
    w("| A − B | dataset | " + " | ".join(f"ε={_eps(e)}" for e in eps) + " |")
    w("| --- | --- |" + " --- |" * len(eps))
    for (a, b, n), rows in sorted(pair.items()):
        by = {r["epsilon"]: r for r in rows}
        w(f"| {a} − {b} | {n} | " + " | ".join(
            f"{by[e]['mean_difference']:+.3f} ± {by[e]['two_se']:.3f}" if e in by else ""
            for e in eps) + " |")
    w("")
    w("## diffprivlib's GaussianNB side by side")
    w("")
    if dpl_rows:
        w(f"{dpl_message}, on the numeric features (adult: its 6), the same folds and bounds. "
          "diffprivlib spends ε/3 on noisy class counts and ε/3 on each of the means and "
          "variances.")
        w("")
        w(f"![diffprivlib]({figdir}/diffprivlib.png)")
        w("")
        agg = defaultdict(list)
        for r in dpl_rows:
            agg[(r["dataset"], r["method"], r["epsilon"])].append(r["accuracy"])
        e_d = sorted({k[2] for k in agg})
        w("| dataset | method | " + " | ".join(f"ε={_eps(e)}" for e in e_d) + " |")
        w("| --- | --- |" + " --- |" * len(e_d))
        for d, m in sorted({(k[0], k[1]) for k in agg}):
            w(f"| {d} | {m} | " + " | ".join(
                _pm(float(np.mean(agg[(d, m, e)])), float(np.std(agg[(d, m, e)])))
                if (d, m, e) in agg else "" for e in e_d) + " |")
    else:
        w(f"Not run: {dpl_message}.")
    w("")
    w("## Bounds wider than the data")
    w("")
    w("The paper argues for structural, data-independent bounds. With bounds f times wider "
      "than the data's range, global sensitivity grows with f, while the smooth sensitivity of "
      "the trimmed statistics grows only through its range terms e^(−(i+j)β)·(U−L), which "
      "the trimming damps in large classes. Accuracy at ε = 1 (the variance floor is held at "
      "the same absolute value for every f):")
    w("")
    w(f"![bounds]({figdir}/bounds.png)")
    w("")
    agg_b = defaultdict(list)
    for r in bounds_rows:
        agg_b[(r["dataset"], r["method"], r["factor"])].append(r["accuracy"])
    w("| dataset | method | " + " | ".join(f"f={f:g}" for f in s.bounds_factors) + " |")
    w("| --- | --- |" + " --- |" * len(s.bounds_factors))
    for d, m in sorted({(k[0], k[1]) for k in agg_b}):
        w(f"| {d} | {m} | " + " | ".join(
            _pm(float(np.mean(agg_b[(d, m, f)])), float(np.std(agg_b[(d, m, f)])))
            for f in s.bounds_factors) + " |")
    w("")
    w("## Training time against size (Fig. 13)")
    w("")
    w("Synthetic bounded data (6 features in [0, 100], two skewed classes), ε = 1, best of "
      f"{s.timing_repeats} interleaved repeat(s) in one process. `smooth, every k (direct)` "
      "evaluates the sensitivity at every distance k without the early stop (the paper's "
      f"procedure), up to {s.direct_max:,} rows.")
    w("")
    w(f"![runtime]({figdir}/runtime.png)")
    w("")
    w("| rows | non-private (s) | global (s) | smooth (s) | smooth / non-private | "
      "smooth / global | direct (s) |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    for n in s.sizes:
        d = tt.get((n, "smooth, every k (direct)"))
        w(f"| {n:,} | {tt[(n, 'non-private')]:.4f} | {tt[(n, 'global (vaidya)')]:.4f} | "
          f"{tt[(n, 'smooth')]:.4f} | {tt[(n, 'smooth')] / tt[(n, 'non-private')]:.2f} | "
          f"{tt[(n, 'smooth')] / tt[(n, 'global (vaidya)')]:.2f} | "
          + (f"{d:.3f}" if d is not None else "—") + " |")
    w("")
    w("## Privacy of one released mean")
    w("")
    w("For each calibration, a seeded search over random small neighbouring datasets (values "
      "in [0, 10], m = 2) finds the pair with the largest exact privacy loss "
      "sup_t |ln p_x(t) − ln p_y(t)| of one released trimmed mean; the DP core's auditor "
      f"({s.audit_samples:,} samples per dataset, 95% confidence) then lower-bounds the loss "
      "from samples alone.")
    w("")
    w(f"![audit]({figdir}/audit.png)")
    w("")
    w("| noise | neighbours | claimed ε | exact loss | auditor's lower bound | proven |")
    w("| --- | --- | --- | --- | --- | --- |")
    for r in audit_rows:
        w(f"| {r['noise']} | {r['neighbours']} | {r['claimed']:g} | {r['exact']:.4f} | "
          f"{r['audited']:.4f} | {'yes' if r['proven'] else 'no'} |")
    w("")
    w("## The release service")
    w("")
    w(f"An NB owner holding 80% of adult (budget ε = 2) served three analysts on the "
      f"`{svc['runtime']}` runtime: {svc['models']} models released, test accuracies "
      + ", ".join(f"{a:.3f}" for a in svc["accuracies"])
      + f"; remaining budget {svc['remaining']:g}; a fourth request (ε = 0.5) was refused with "
      f"`{svc['fourth_request'] or 'nothing'}`; {svc['ledger_entries']} ledger entries.")
    w("")
    w("## Where this differs from the paper, and why")
    w("")
    for name in names:
        w(f"- **{name}, small ε (≤ {_eps(small_eps)})**: the paper reports smooth sensitivity "
          f"above Vaidya et al.; paired over folds, smooth − Vaidya here: "
          f"{_verdict(rows_small[name])}.")
    w("- The proven calibration costs a factor 2(γ+1)/√2 ≈ 7 in noise scale against the "
      "paper's constant (β is also 10 times smaller), and Laplace noise at the global "
      "sensitivity needs none of it; smooth sensitivity wins only where S is more than that "
      "factor below the global sensitivity: large classes whose trimmed spread is far inside "
      "the bounds (adult's skewed features, or wide structural bounds, see above). With "
      "bounds taken from the data's own range, glass and seeds (9 to 76 rows per class) "
      "offer little such margin, and under add/remove neighbouring a small class can shrink "
      "to one row within a few steps, which puts a term e^(−(w−1)β)·(U−L) into S.")
    worst = max(paper_audit, key=lambda r: r["exact"] / r["claimed"])
    if worst["exact"] > worst["claimed"]:
        w(f"- The paper's constant is not ε-DP: on the pair found ({worst['neighbours']}), one "
          f"released mean loses {worst['exact'] / worst['claimed']:.3f}·ε exactly"
          + (f", and the auditor certifies at least {worst['audited'] / worst['claimed']:.3f}·ε"
             if worst["audited"] > worst["claimed"] else
             f" (the auditor's sample-based bound, {worst['audited'] / worst['claimed']:.3f}·ε, "
             "is below ε at this sample size)")
          + "; the curves labelled `paper constant` reproduce the paper's setting, not a "
          "private algorithm.")
    else:
        w("- On the pairs searched, the paper's constant stayed within ε "
          f"({worst['exact'] / worst['claimed']:.3f}·ε at most); it still has no proof, and "
          "β = ε' is far above what Theorem 2 allows.")
    w("- The (ε, δ) variants use NRS's conservative Laplace and Gaussian constants "
      "(Gaussian: α = ε/(5√(2 ln(2/δ))), β = ε/(4(1+ln(2/δ)))); the paper does not give its "
      "constants, so its Gaussian curves cannot be matched exactly.")
    ratios = {n: tt[(n, "smooth")] / tt[(n, "global (vaidya)")] for n in s.sizes}
    big = max(s.sizes)
    w("- Runtime: the early stop in k and the pruned pair search make the smooth sensitivity "
      "an O(n) selection plus a search whose size does not grow with n (about "
      f"{max(ratios.values()):.0f}× the global version at most, at n = "
      f"{max(ratios, key=ratios.__getitem__):,}, where the search dominates a tiny fit; "
      f"{ratios[big]:.2f}× at n = {big:,}), instead of the paper's O(n²).")
    w("- Trimming amount, the variance floor and data-derived bounds are choices the paper "
      "does not specify (see Setting).")
    w("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L))
    return path


__all__ = ["FULL", "METHODS", "QUICK", "Settings", "accuracy", "privacy_audit", "run",
           "runtime_figure", "service", "widened_bounds", "write_report"]
