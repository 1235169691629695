"""The one pipeline from a scenario to its results folder (simulations/pipeline.py)."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

from ppknn.protocols.ppknn_ring.plugin import attribution
from ppknn.simulations.leakage import measure
from ppknn.simulations.leakage.table import rows_from_csv, write_table
from ppknn.simulations.pipeline import run_scenario
from ppknn.simulations.scenario import parse_scenario
from tests.helpers import figure_texts

SMALL = {"run": {"name": "pipe", "seed": 3}, "data": {"dataset": "glass"},
         "parties": {"n": 4}, "protocol": {"k": 3, "rounds": 2},
         "runtime": {"kind": "inprocess", "channels": False}}


def _run(stage=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_scenario(parse_scenario(SMALL), stage=stage, **kw)


def test_a_folder_run_times_its_phases_and_plots_only_when_asked(tmp_path):
    done = _run(tmp_path / "a")
    names = {p.name for p in (tmp_path / "a").iterdir()}
    assert {"summary.json", "leakage.csv", "predictions.csv", "disclosure.csv"} <= names
    assert not names & {"summary.svg", "leakage.svg"}
    timings = json.loads((tmp_path / "a" / "summary.json").read_text())["timings_s"]
    assert list(timings) == ["prepare_s", "startup_s", "protocol_s", "recorded_s",
                             "measure_s", "leakage_s", "write_s"]
    assert done.run.timings["leakage_s"] == timings["leakage_s"]
    _run(tmp_path / "b", plot=True)
    run_id = json.loads((tmp_path / "b" / "summary.json").read_text())["run_id"]
    assert f"{run_id}: glass" in figure_texts(tmp_path / "b" / "summary.svg")
    assert f"leakage: {run_id}" in figure_texts(tmp_path / "b" / "leakage.svg")
    assert "plots_s" in json.loads((tmp_path / "b" / "summary.json").read_text())["timings_s"]
    for name in ("predictions.csv", "parties.csv", "disclosure.csv", "leakage.csv",
                 "public.json", "scenario.json"):  # plotting changes nothing else
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_the_leakage_table_scored_from_kept_truth_equals_one_read_from_the_folder(tmp_path):
    _run(tmp_path / "a")
    again = measure.recompute(tmp_path / "a")  # reads the truth file back
    write_table(again, tmp_path / "again.csv")
    assert (tmp_path / "again.csv").read_bytes() == (tmp_path / "a" / "leakage.csv").read_bytes()
    assert [r.as_dict() for r in rows_from_csv(tmp_path / "a" / "leakage.csv")] == \
        [r.as_dict() for r in rows_from_csv(tmp_path / "again.csv")]


def test_a_kept_truth_is_used_once_and_never_after_its_file_changed(tmp_path, monkeypatch):
    run = _run().run
    folder = tmp_path / "t"
    folder.mkdir()
    measure.save_truths(run, folder)
    (path,) = folder.glob("truth-*.npz")
    loads = []
    real = measure.load_truth
    monkeypatch.setattr(measure, "load_truth", lambda p: loads.append(p) or real(p))
    kept = measure._truth_at(run.outcome, run.prepared.data, path)
    assert loads == [] and measure._SAVED == {}  # taken as kept, once
    again = measure._truth_at(run.outcome, run.prepared.data, path)
    assert loads == [path] and kept.keys() == again.keys()
    for key in kept:
        np.testing.assert_array_equal(kept[key], again[key])
        assert kept[key].dtype == again[key].dtype
    path.unlink()
    measure.save_truths(run, folder)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # changed since it was saved
    measure._truth_at(run.outcome, run.prepared.data, path)
    assert loads == [path, path]


def test_a_sweep_run_writes_nothing_and_scores_no_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = _run()
    assert list(tmp_path.iterdir()) == []
    assert "leakage_s" not in done.run.timings and done.run.timings["measure_s"] >= 0


def test_scoring_from_held_parts_equals_streaming_them(tmp_path, monkeypatch):
    from ppknn.simulations.leakage import stream

    _run(tmp_path / "a")
    held = measure.recompute(tmp_path / "a")
    assert stream._HELD  # read whole once, held for every attack
    stream.release()
    monkeypatch.setattr(stream, "HOLD_BUDGET", 0)  # row group by row group, as before
    attribution._ATTRIBUTION.clear()
    streamed = measure.recompute(tmp_path / "a")
    assert not stream._HELD
    assert [r.as_dict() for r in held] == [r.as_dict() for r in streamed]
