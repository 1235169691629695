"""``ppknn compare``: every protocol on the same data, at matched privacy, side by side.

The names a caller needs, from the two halves of the comparison:

- :mod:`ppknn.simulations.compare_runs` -- the spec (:func:`load_comparison`,
  :func:`quick_spec`), the runs (:func:`run_comparison`, :func:`run_cell`) and their
  aggregation over seeds (:func:`aggregate`); its docstring says what a row holds;
- :mod:`ppknn.simulations.compare_report` -- the report written from those rows
  (:func:`write_report`, :func:`render_saved`, :func:`advice`), and
  ``python -m ppknn.simulations.compare FOLDER`` (:func:`main`), which renders it again
  from a saved comparison.

The report is built on the runs and never the other way round.
"""

from __future__ import annotations

from ppknn.simulations.compare_report import (
    HEAVY_LEAK,
    advice,
    fmt_num,
    load_rows,
    main,
    render_saved,
    write_report,
)
from ppknn.simulations.compare_runs import (
    ADVANTAGE,
    PER_SEED_ALPHA,
    PROFILES,
    QUICK_SPEC,
    Comparison,
    NetworkProfile,
    advantage_cell,
    aggregate,
    cell_bound,
    leak_cell,
    load_comparison,
    predict_network,
    quick_spec,
    ranking,
    replay_audited,
    run_cell,
    run_comparison,
)

__all__ = ["ADVANTAGE", "HEAVY_LEAK", "PER_SEED_ALPHA", "PROFILES", "QUICK_SPEC",
           "Comparison", "NetworkProfile", "advantage_cell", "advice", "aggregate",
           "cell_bound", "fmt_num", "leak_cell", "load_comparison", "load_rows", "main",
           "predict_network", "quick_spec", "ranking", "render_saved", "replay_audited",
           "run_cell", "run_comparison", "write_report"]


if __name__ == "__main__":  # pragma: no cover
    main()
