"""What every party learns, in every protocol: one leakage table per run.

- :mod:`.table`: the row model (observer, target, attack, measured quantity
  with a 95% interval, promised bound, verdict), ``leakage.csv`` / ``.svg``.
- :mod:`.attacks`: the attacks per protocol (defaults and scripted) and their
  scorers over views, provenance and ground truth.
- :mod:`.truth`: the simulation-only ground truth saved beside the transcript.
- :mod:`.measure`: the table of a run, and its recomputation from a results folder.
"""

from ppknn.simulations.leakage.measure import recompute, run_table, save_truths
from ppknn.simulations.leakage.table import LeakageRow, plot_table, summary, write_table

__all__ = ["LeakageRow", "plot_table", "recompute", "run_table", "save_truths", "summary",
           "write_table"]
