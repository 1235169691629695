"""The report model: claims, tables, figures, sections and reports as data.

A reproduction builds these frozen, keyword-only objects from its measured
tables; :mod:`simulations.reporting.markdown`, :mod:`~.csvio` and
:mod:`~.plots` render them. Nothing here formats text or touches files
except :meth:`Table.write_csv` and :meth:`Table.read_csv`.

The verdict of a :class:`Claim` follows one rule. Let *A* be the values
the paper's statement accepts (``at_least p``: [p, ∞); ``at_most p``:
(-∞, p]; ``within p``: [p - t, p + t] with t = max(abs_tol, rel_tol·|p|);
``between (l, h)``: [l, h]), *N* be *A* widened by ``margin`` on each side,
and *I* be the measured 95% interval, or the single measured value when
there is none. Then

- **reproduced** when *I* lies inside *A* (with an interval: the whole
  interval, i.e. the measurement meets the statement with confidence);
- **differs** when *I* does not reach *N*;
- **partly** otherwise (the interval straddles the statement, or the value
  misses it by at most ``margin``);
- **not measured** when there is no measured value (``None`` or NaN).

Bounds are inclusive, up to a relative rounding slack of 1e-12. A ``holds``
claim's measured value is a bool (reproduced / differs) or the share of
cases in which the statement holds: reproduced when *I* is at 1 (all
cases), differs when *I* is at 0 (none), partly otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError
from ppknn.simulations.reporting import csvio

COMPARISONS = ("at_least", "at_most", "within", "between", "holds")
"""How a measured value is compared with the paper's."""

VERDICTS = ("reproduced", "partly", "differs", "not measured")
"""The possible verdicts of a claim, best first."""

FIGURE_KINDS = ("line", "bar")
"""What :func:`simulations.reporting.plots.plot` draws."""

_SLACK = 1e-12


def _real(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _nonneg(owner: str, name: str, value: Any) -> float:
    if not _real(value) or math.isnan(value) or value < 0 or math.isinf(value):
        raise ConfigError(f"{owner}: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _le(a: float, b: float) -> bool:
    """``a <= b`` up to rounding (relative to ``b``)."""
    return a <= b + _SLACK * max(1.0, abs(b)) if math.isfinite(b) else a <= b


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One statement of the paper beside the measurement.

    Parameters
    ----------
    id
        A short unique key (``"fig2-close"``).
    where
        The figure or section of the paper (``"Fig. 2"``, ``"§6.2.3"``).
    statement
        What the paper says, in words.
    quantity
        The name of the measured quantity (``"largest |PP - kNN| accuracy"``).
    comparison
        One of :data:`COMPARISONS`.
    paper
        The paper's value: a number (``at_least``, ``at_most``, ``within``),
        a ``(low, high)`` pair (``between``), or ``True``/``None``
        (``holds``: the statement as the paper makes it).
    measured
        The measured value (a number; for ``holds`` a bool or a share of
        cases in [0, 1]); ``None`` or NaN when not measured.
    interval
        The measured value's 95% interval ``(low, high)``, if any.
    abs_tol, rel_tol
        ``within`` only: the accepted distance from ``paper``,
        ``max(abs_tol, rel_tol * |paper|)``.
    margin
        How far outside the accepted values a measurement still counts as
        ``partly`` (not for ``holds``).
    percent
        The values are shares, shown as percentages.
    explanation
        What explains a difference (or what else was measured).

    Examples
    --------
    >>> c = Claim(id="acc", where="Fig. 2", statement="accuracy at least 85%",
    ...           quantity="accuracy", comparison="at_least", paper=0.85, measured=0.86,
    ...           interval=(0.84, 0.88), percent=True)
    >>> c.verdict, round(c.gap, 3)
    ('partly', 0.01)
    """

    id: str
    where: str
    statement: str
    quantity: str
    comparison: str
    paper: float | tuple[float, float] | bool | None = None
    measured: float | bool | None = None
    interval: tuple[float, float] | None = None
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    margin: float = 0.0
    percent: bool = False
    explanation: str = ""

    def __post_init__(self) -> None:
        who = f"claim {self.id!r}"
        if not self.id or not isinstance(self.id, str):
            raise ConfigError(f"a claim needs a non-empty id, got {self.id!r}")
        if self.comparison not in COMPARISONS:
            raise ConfigError(f"{who}: unknown comparison {self.comparison!r}; "
                              f"allowed: {', '.join(COMPARISONS)}")
        for name in ("abs_tol", "rel_tol", "margin"):
            object.__setattr__(self, name, _nonneg(who, name, getattr(self, name)))
        if self.comparison != "within" and (self.abs_tol or self.rel_tol):
            raise ConfigError(f"{who}: abs_tol/rel_tol apply to 'within' only, not to "
                              f"{self.comparison!r} (abs_tol={self.abs_tol!r}, "
                              f"rel_tol={self.rel_tol!r})")
        object.__setattr__(self, "paper", self._checked_paper(who))
        object.__setattr__(self, "measured", self._checked_measured(who))
        object.__setattr__(self, "interval", self._checked_interval(who))

    def _checked_paper(self, who: str) -> float | tuple[float, float] | bool | None:
        p = self.paper
        if self.comparison == "holds":
            if p is None or p is True:
                return True
            raise ConfigError(f"{who}: a 'holds' claim takes paper=True (phrase the "
                              f"statement as the paper makes it), got {p!r}")
        if self.comparison == "between":
            if (isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 2
                    or not all(_real(v) and not math.isnan(v) for v in p)):
                raise ConfigError(f"{who}: 'between' needs paper=(low, high), two numbers, "
                                  f"got {p!r}")
            low, high = float(p[0]), float(p[1])
            if low > high:
                raise ConfigError(f"{who}: 'between' needs low <= high, got {p!r}")
            return (low, high)
        if not _real(p) or math.isnan(p):  # type: ignore[arg-type]
            raise ConfigError(f"{who}: {self.comparison!r} needs the paper's value as a "
                              f"number, got {p!r}")
        return float(p)  # type: ignore[arg-type]

    def _checked_measured(self, who: str) -> float | bool | None:
        m: Any = self.measured
        if hasattr(m, "item"):  # numpy scalars, numpy bools included
            m = m.item()
        if m is None or isinstance(m, bool) and self.comparison == "holds":
            return m
        if not _real(m):
            raise ConfigError(f"{who}: measured must be a number"
                              + (" or a bool" if self.comparison == "holds" else "")
                              + f", got {m!r}")
        m = float(m)
        if self.comparison == "holds" and not math.isnan(m) and not 0.0 <= m <= 1.0:
            raise ConfigError(f"{who}: a 'holds' claim measures a bool or a share of cases "
                              f"in [0, 1], got {m!r}")
        return m

    def _checked_interval(self, who: str) -> tuple[float, float] | None:
        iv = self.interval
        if iv is None:
            return None
        if (isinstance(iv, (str, bytes)) or not isinstance(iv, Sequence) or len(iv) != 2
                or not all(_real(v) for v in iv)):
            raise ConfigError(f"{who}: interval must be (low, high), two numbers, got {iv!r}")
        low, high = float(iv[0]), float(iv[1])
        if not self.is_measured:
            return (low, high)
        if isinstance(self.measured, bool):
            raise ConfigError(f"{who}: a bool measurement has no interval, got {iv!r}")
        if math.isnan(low) or math.isnan(high) or low > high:
            raise ConfigError(f"{who}: interval needs low <= high, got {iv!r}")
        return (low, high)

    # ------------------------------------------------------------------ derived
    @property
    def is_measured(self) -> bool:
        """Whether there is a measured value (not ``None``, not NaN)."""
        m = self.measured
        return m is not None and (isinstance(m, bool) or not math.isnan(m))

    @property
    def tolerance(self) -> float:
        """``within``: the accepted distance from the paper's value (else 0)."""
        if self.comparison != "within":
            return 0.0
        assert isinstance(self.paper, float)
        return max(self.abs_tol, self.rel_tol * abs(self.paper))

    @property
    def accepted(self) -> tuple[float, float]:
        """The values the paper's statement accepts, ``(low, high)`` (``holds``: (1, 1))."""
        p = self.paper
        if self.comparison == "holds":
            return (1.0, 1.0)
        if isinstance(p, tuple):
            return p
        assert isinstance(p, float)
        if self.comparison == "at_least":
            return (p, math.inf)
        if self.comparison == "at_most":
            return (-math.inf, p)
        return (p - self.tolerance, p + self.tolerance)

    @property
    def verdict(self) -> str:
        """One of :data:`VERDICTS`, by the rule in the module docstring."""
        if not self.is_measured:
            return "not measured"
        m = self.measured
        if isinstance(m, bool):
            return "reproduced" if m else "differs"
        assert isinstance(m, float)
        lo, hi = self.interval if self.interval is not None else (m, m)
        if self.comparison == "holds":
            return "reproduced" if lo >= 1.0 else "differs" if hi <= 0.0 else "partly"
        a_lo, a_hi = self.accepted
        if _le(a_lo, lo) and _le(hi, a_hi):
            return "reproduced"
        if not _le(a_lo - self.margin, hi) or not _le(lo, a_hi + self.margin):
            return "differs"
        return "partly"

    @property
    def gap(self) -> float | None:
        """Measured minus the paper's value.

        ``between``: the signed distance outside the range (0 inside);
        ``holds`` or not measured: ``None``.
        """
        if not self.is_measured or self.comparison == "holds":
            return None
        m = self.measured
        assert isinstance(m, float)
        if self.comparison == "between":
            low, high = self.accepted
            return m - high if m > high else m - low if m < low else 0.0
        assert isinstance(self.paper, float)
        return m - self.paper


def count_verdicts(claims: Iterable[Claim]) -> dict[str, int]:
    """How many claims have each verdict (every verdict of :data:`VERDICTS` present)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for c in claims:
        counts[c.verdict] += 1
    return counts


# ---------------------------------------------------------------------- tables
def _plain(value: Any) -> Any:
    """Numpy scalars as Python values; floats rounded to what the CSV keeps."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.6g}")
    return value


@dataclass(frozen=True, kw_only=True)
class Table:
    """Rows with fixed columns: written as CSV, read back, drawn and shown.

    The name and columns are fixed; rows are appended with :meth:`add`
    (floats are kept to the 6 significant digits the CSV holds, so a table
    read back equals the one written).

    Examples
    --------
    >>> t = Table(name="acc", columns=("k", "accuracy"))
    >>> t.add(k=1, accuracy=0.71234567)
    >>> t.add(k=5, accuracy=0.64)
    >>> t.column("accuracy"), t.where(k=5)
    ([0.712346, 0.64], [{'k': 5, 'accuracy': 0.64}])
    """

    name: str
    columns: tuple[str, ...]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        if not self.name or len(set(cols)) != len(cols) or not cols:
            raise ConfigError(f"table {self.name!r}: needs a name and distinct columns, "
                              f"got {list(cols)}")
        object.__setattr__(self, "columns", cols)
        rows = [dict(r) for r in self.rows]
        object.__setattr__(self, "rows", [])
        for r in rows:
            self.add(**r)

    @classmethod
    def from_rows(cls, name: str, rows: Iterable[Mapping[str, Any]],
                  columns: Sequence[str] | None = None) -> Table:
        """A table of dict rows.

        The columns default to the rows' keys in first-seen order; a key a
        row lacks is ``None``.
        """
        rows = list(rows)
        cols = tuple(columns) if columns is not None else tuple(csvio.columns_of(rows))
        table = cls(name=name, columns=cols)
        for r in rows:
            table.add(**{c: r.get(c) for c in cols}, **{k: r[k] for k in r if k not in cols})
        return table

    def add(self, **values: Any) -> None:
        """Append one row; every column must be given, and no other."""
        missing = [c for c in self.columns if c not in values]
        extra = [k for k in values if k not in self.columns]
        if missing or extra:
            raise ConfigError(f"table {self.name!r}: missing columns {missing}, "
                              f"unknown columns {extra}")
        self.rows.append({c: _plain(values[c]) for c in self.columns})

    def where(self, **match: Any) -> list[dict[str, Any]]:
        """The rows whose columns equal ``match``."""
        unknown = [k for k in match if k not in self.columns]
        if unknown:
            raise ConfigError(f"table {self.name!r}: unknown columns {unknown}")
        return [r for r in self.rows if all(r[k] == v for k, v in match.items())]

    def column(self, name: str, **match: Any) -> list[Any]:
        """One column of the rows matching ``match``."""
        if name not in self.columns:
            raise ConfigError(f"table {self.name!r}: unknown column {name!r}")
        return [r[name] for r in self.where(**match)]

    def write_csv(self, path: Path | str) -> Path:
        """Write as CSV (:func:`simulations.reporting.csvio.write_rows`); returns ``path``."""
        return csvio.write_rows(path, self.rows, columns=self.columns)

    @classmethod
    def read_csv(cls, path: Path | str, *, name: str | None = None) -> Table:
        """A table written by :meth:`write_csv` (the name defaults to the file's stem)."""
        path = Path(path)
        return cls(name=name or path.stem, columns=tuple(csvio.read_header(path)),
                   rows=csvio.read_rows(path))

    def __len__(self) -> int:
        return len(self.rows)


# --------------------------------------------------------------------- figures
@dataclass(frozen=True, kw_only=True)
class Series:
    """One line (or set of bars) of a figure, drawn from a table.

    Parameters
    ----------
    label
        The legend entry (with ``Figure.group_by``, prefixed to each group's value).
    y
        The column drawn against the figure's ``x``.
    where
        Only rows whose columns equal these values.
    low, high
        Columns holding the interval of ``y`` (error bars or a band).
    err
        A column holding a symmetric error (e.g. a standard deviation).
    band
        Draw the interval as a shaded band instead of error bars.
    dashed
        Draw a dashed line.
    """

    label: str = ""
    y: str
    where: Mapping[str, Any] = field(default_factory=dict)
    low: str | None = None
    high: str | None = None
    err: str | None = None
    band: bool = False
    dashed: bool = False

    def __post_init__(self) -> None:
        if (self.low is None) != (self.high is None):
            raise ConfigError(f"series {self.label or self.y!r}: low and high go together, "
                              f"got low={self.low!r}, high={self.high!r}")
        if self.err is not None and self.low is not None:
            raise ConfigError(f"series {self.label or self.y!r}: give err or low/high, not "
                              f"both (err={self.err!r}, low={self.low!r})")
        object.__setattr__(self, "where", dict(self.where))

    @property
    def columns(self) -> tuple[str, ...]:
        """The table columns this series reads."""
        return tuple(c for c in (self.y, self.low, self.high, self.err, *self.where)
                     if c is not None)


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure: what to draw from which table, and where the files go.

    Parameters
    ----------
    name
        The file stem (``"fig2_accuracy_vs_k"``).
    title
        The figure's title (the plot adds the run's name).
    xlabel, ylabel
        Axis labels.
    x
        The table column on the x axis.
    series
        The lines (or bar sets).
    kind
        ``"line"`` or ``"bar"``.
    panel_by
        One panel per distinct value of this column.
    group_by
        Split every series into one line per distinct value of this column.
    logx, logy
        Logarithmic axes.
    categorical
        The x values are categories (e.g. ordinal privacy levels): evenly spaced in
        their sorted order and labelled with their values, not placed on a number line.
    ylim
        Fixed y range. A range that does not start at 0 is a zoom: the plot's title
        states it.
    hlines
        Reference lines, ``(label, y)`` pairs.
    csv, png
        File names of the data and the picture, relative to the output
        folder (default ``<name>.csv`` and ``<name>.png``).
    """

    name: str
    title: str
    xlabel: str
    ylabel: str
    x: str
    series: tuple[Series, ...]
    kind: str = "line"
    panel_by: str | None = None
    group_by: str | None = None
    logx: bool = False
    logy: bool = False
    categorical: bool = False
    ylim: tuple[float, float] | None = None
    hlines: tuple[tuple[str, float], ...] = ()
    csv: str = ""
    png: str = ""

    def __post_init__(self) -> None:
        who = f"figure {self.name!r}"
        if not self.name:
            raise ConfigError(f"a figure needs a name, got {self.name!r}")
        if self.kind not in FIGURE_KINDS:
            raise ConfigError(f"{who}: unknown kind {self.kind!r}; allowed: "
                              f"{', '.join(FIGURE_KINDS)}")
        if not self.xlabel or not self.ylabel or not self.title:
            raise ConfigError(f"{who}: needs a title and both axis labels, got "
                              f"title={self.title!r}, xlabel={self.xlabel!r}, "
                              f"ylabel={self.ylabel!r}")
        if self.categorical and self.logx:
            raise ConfigError(f"{who}: a categorical x axis cannot be logarithmic "
                              "(categorical=True, logx=True)")
        object.__setattr__(self, "series", tuple(self.series))
        if not self.series:
            raise ConfigError(f"{who}: needs at least one series")
        object.__setattr__(self, "hlines", tuple((str(lab), float(y)) for lab, y in self.hlines))
        object.__setattr__(self, "csv", self.csv or f"{self.name}.csv")
        object.__setattr__(self, "png", self.png or f"{self.name}.png")

    @property
    def columns(self) -> tuple[str, ...]:
        """Every table column the figure reads."""
        cols = [self.x, *(c for s in self.series for c in s.columns),
                *(c for c in (self.panel_by, self.group_by) if c is not None)]
        return tuple(dict.fromkeys(cols))


# -------------------------------------------------------------------- sections
@dataclass(frozen=True, kw_only=True)
class Section:
    """A part of a report: heading, paragraphs, figures, tables, claims (in that order)."""

    heading: str
    text: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()
    claims: tuple[Claim, ...] = ()
    level: int = 2

    def __post_init__(self) -> None:
        if isinstance(self.text, str):
            raise ConfigError(f"section {self.heading!r}: text is a tuple of paragraphs, "
                              f"got one string {self.text[:40]!r}")
        if self.level not in (2, 3, 4):
            raise ConfigError(f"section {self.heading!r}: level must be 2, 3 or 4, "
                              f"got {self.level!r}")
        for name in ("text", "figures", "tables", "claims"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True, kw_only=True)
class Run:
    """Facts of the run that produced a report."""

    command: str
    runtime: str = "inprocess"
    quick: bool = False
    seed: int | None = None
    seconds: float | None = None
    reused: int = 0
    """Runs kept from an earlier, interrupted invocation of the same command (resumed)."""


@dataclass(frozen=True, kw_only=True)
class Report:
    """A whole report.

    Parameters
    ----------
    title
        The report's title (the paper).
    intro
        Paragraphs after the run line.
    sections
        The body.
    settings
        Name -> value of the run's settings (shown as a table).
    run
        The run's facts (command, runtime, quick flag, seed, duration).
    deviations
        Where and why this differs from the paper (one bullet each).
    figure_dir
        Folder of the PNGs relative to the report (``"xiong"``).
    """

    title: str
    intro: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    run: Run | None = None
    deviations: tuple[str, ...] = ()
    figure_dir: str = ""

    def __post_init__(self) -> None:
        for name in ("intro", "deviations"):
            if isinstance(getattr(self, name), str):
                raise ConfigError(f"report {self.title!r}: {name} is a tuple of paragraphs, "
                                  "got one string")
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "sections", tuple(self.sections))
        object.__setattr__(self, "settings", dict(self.settings))
        ids = [c.id for c in self.claims]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ConfigError(f"report {self.title!r}: claim ids must be unique, repeated: {dup}")

    @property
    def claims(self) -> tuple[Claim, ...]:
        """Every claim of every section, in order."""
        return tuple(c for s in self.sections for c in s.claims)

    @property
    def figures(self) -> tuple[Figure, ...]:
        """Every figure of every section, in order."""
        return tuple(f for s in self.sections for f in s.figures)


__all__ = ["COMPARISONS", "FIGURE_KINDS", "VERDICTS", "Claim", "Figure", "Report", "Run",
           "Section", "Series", "Table", "count_verdicts"]
