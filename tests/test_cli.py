"""The ppknn command line: run, leakage, errors; the embedded default."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.simulations.scenario import load_scenario
from tests.helpers import figure_texts

runner = CliRunner()

SMALL = """
[run]
name = "cli"
seed = 2
output = "{out}"

[data]
dataset = "glass"

[parties]
n = 4

[protocol]
k = 3
rounds = 2

[runtime]
kind = "inprocess"
channels = true
"""


def test_run_writes_results_and_leakage_recomputes(tmp_path):
    out = tmp_path / "res"
    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=out))
    result = runner.invoke(app, ["run", str(scen), "--plot"])
    assert result.exit_code == 0, result.output
    for name in ("scenario.json", "public.json", "predictions.csv", "disclosure.csv",
                 "summary.json", "summary.svg", "leakage.svg", "transcript/totals.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    phases = summary["timings_s"]
    assert list(phases) == ["prepare_s", "startup_s", "protocol_s", "recorded_s", "measure_s",
                            "leakage_s", "write_s", "plots_s"]
    assert all(v >= 0 for v in phases.values())
    assert "phases: prepare" in result.output and " plots " in result.output
    assert summary["parties"] == 4 and summary["runtime"] == "inprocess"
    assert summary["communication"]["messages"] == 4 * 2 + 3 + 4 + 3
    before = (out / "disclosure.csv").read_text()
    (out / "disclosure.csv").unlink()
    again = runner.invoke(app, ["leakage", str(out)])
    assert again.exit_code == 0, again.output
    assert (out / "disclosure.csv").read_text() == before
    assert all(f"owner-0{i}" in again.output for i in range(4))  # 4 parties: all shown
    top = runner.invoke(app, ["leakage", str(out), "--top", "2"])
    assert top.exit_code == 0, top.output
    assert "the 2 most disclosed of 4 parties" in top.output
    assert "quartiles" in top.output
    with (out / "disclosure.csv").open() as fh:
        most = sorted(csv.DictReader(fh), key=lambda r: -float(r["probability"]))
    assert most[0]["party"] in top.output
    with (out / "predictions.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == summary["queries"]


def test_no_room_for_the_leakage_spill_exits_2_and_keeps_the_run(tmp_path, monkeypatch):
    """Scoring that cannot write its temporary files: exit 2, one clear line naming the
    folder, and the run's transcript kept in the folder."""
    from ppknn.simulations.leakage import stream

    def full(self):
        raise OSError(28, "No space left on device")

    out = tmp_path / "res"
    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=out))
    monkeypatch.setattr(stream, "STATE_BUDGET", 1)  # one node per group: the sums spill
    with monkeypatch.context() as mp:
        mp.setattr(stream._Spill, "flush", full)
        result = runner.invoke(app, ["run", str(scen)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "no space left on the device" in said and "transcript" in said
    assert "Traceback" not in result.output
    assert (out / "transcript" / "totals.json").is_file() and (out / "failure.json").is_file()
    assert "make room" in json.loads((out / "failure.json").read_text())["message"]
    assert not list((out / "transcript").glob(".scatter-*"))  # the spill is removed


def test_too_little_free_space_for_the_spill_is_refused_before_writing(tmp_path,
                                                                      monkeypatch):
    """The spill's size is estimated first: without that much free, nothing is written and
    the one-line error says how much is needed and how much is free."""
    from ppknn.simulations.leakage import stream

    written = []
    monkeypatch.setattr(stream._Spill, "flush",
                        lambda self, f=stream._Spill.flush: (written.append(1), f(self)))
    out = tmp_path / "res"
    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=out))
    monkeypatch.setattr(stream, "STATE_BUDGET", 1)
    with monkeypatch.context() as mp:
        mp.setattr(stream, "_free_bytes", lambda where: 1000)
        result = runner.invoke(app, ["run", str(scen)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "only 1000 bytes is free" in message and "KiB of temporary files" in message
    assert written == []
    assert (out / "transcript" / "totals.json").is_file()
    # the protocol had completed: the refused folder is scored once there is room, and
    # gives the table of the same run done with room
    assert "ppknn leakage" in message and str(out) in message
    result = runner.invoke(app, ["run", str(scen), "--output", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output
    assert written
    again = runner.invoke(app, ["leakage", str(out)])
    assert again.exit_code == 0, again.output
    assert "failed after its protocols completed" in again.output
    assert (out / "leakage.csv").read_bytes() == (tmp_path / "ok" / "leakage.csv").read_bytes()
    assert ((out / "disclosure.csv").read_bytes()
            == (tmp_path / "ok" / "disclosure.csv").read_bytes())


@pytest.mark.parametrize("where", ["measure", "scoring", "interrupt"])
def test_a_failure_after_the_protocol_keeps_a_folder_leakage_scores(tmp_path, monkeypatch,
                                                                   where):
    """An internal error while measuring or scoring: exit 1 with one line (the traceback is
    in failure.json), the folder named, and ``ppknn leakage`` gives the table of the same
    run that did not fail. An interrupt while scoring: the same, exit 130."""
    from ppknn.simulations import registry
    from ppknn.simulations.leakage import measure

    def broken(*args, **kwargs):
        if where == "interrupt":
            raise KeyboardInterrupt
        raise ZeroDivisionError("a broken scorer")

    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=tmp_path / "ok"))
    assert runner.invoke(app, ["run", str(scen)]).exit_code == 0
    out = tmp_path / "res"
    with monkeypatch.context() as mp:
        if where == "measure":
            mp.setattr(type(registry.get("ppknn-ring")), "measure", broken)
        else:  # scoring, or an interrupt while scoring
            mp.setattr(measure, "score", broken)
        failed = runner.invoke(app, ["run", str(scen), "--output", str(out)])
    text = " ".join(failed.output.split())
    record = json.loads((out / "failure.json").read_text())
    if where == "interrupt":
        assert failed.exit_code == 130, failed.output
        assert "interrupted" in text and record["error"] == "KeyboardInterrupt"
    else:
        assert failed.exit_code == 1, failed.output
        assert "ZeroDivisionError: a broken scorer" in text
        assert "ZeroDivisionError" in record["traceback"]
    assert "Traceback" not in text and f"ppknn leakage {out}" in text
    for name in ("scenario.json", "public.json", "transcript/truth-ppknn-ring.npz"):
        assert (out / name).is_file(), name
    assert not (out / "transcript" / "failure.json").exists()
    # the run's answers are kept: every column the failed run wrote is the complete run's
    with (out / "predictions.csv").open() as fh, \
            (tmp_path / "ok" / "predictions.csv").open() as ok_fh:
        kept, complete = list(csv.DictReader(fh)), list(csv.DictReader(ok_fh))
    assert {"ppknn-ring", "ppknn-ring:baseline"} <= set(kept[0]) <= set(complete[0])
    assert [{k: r[k] for k in kept[0]} for r in complete] == kept
    # so are its parties and summary, without what measuring adds, marked incomplete
    with (out / "parties.csv").open() as fh, (tmp_path / "ok" / "parties.csv").open() as ok_fh:
        kept, complete = list(csv.DictReader(fh)), list(csv.DictReader(ok_fh))
    assert {"party", "roles", "sent_bytes", "received_bytes"} <= set(kept[0])
    assert set(kept[0]) <= set(complete[0])
    assert [{k: r[k] for k in kept[0]} for r in complete] == kept
    summary = json.loads((out / "summary.json").read_text())
    ok_summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert "before anything was measured" in summary["incomplete"]
    assert "incomplete" not in ok_summary and "leakage" not in summary
    for key in ("accuracy", "parties", "queries", "communication", "channels"):
        assert summary[key] == ok_summary[key], key
    assert summary["results"]["ppknn-ring"]["privacy"] == \
        ok_summary["results"]["ppknn-ring"]["privacy"]
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "holds a failed run" in text and f"ppknn leakage {out}" in text
    assert "before anything was measured" in text and "Traceback" not in text
    assert f"{ok_summary['accuracy']:.4f}" in text
    again = runner.invoke(app, ["leakage", str(out)])
    assert again.exit_code == 0, again.output
    assert (out / "leakage.csv").read_bytes() == (tmp_path / "ok" / "leakage.csv").read_bytes()
    # scoring it completes the summary's leakage section, the same as the complete run's
    assert json.loads((out / "summary.json").read_text())["leakage"] == ok_summary["leakage"]
    assert "leakage: " in " ".join(runner.invoke(app, ["show", str(out)]).output.split())


def test_show_names_a_party_that_failed_during_the_protocol(tmp_path):
    """A run whose party failed: ``ppknn show`` says who, why, and that it is not scored."""
    out = tmp_path / "res"
    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=out) + '\n[faults]\nparty = "owner-02"\nkind = "raise"\n'
                    'occurrence = 2\n')
    failed = runner.invoke(app, ["run", str(scen)])
    assert failed.exit_code == 3, failed.output
    assert (out / "transcript" / "failure.json").is_file()
    assert not (out / "summary.json").exists()
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "holds a failed run: PartyFailure: party 'owner-02' failed" in text
    assert "while its protocols ran" in text and "not scored" in text
    assert "Traceback" not in text
    assert runner.invoke(app, ["show", str(tmp_path)]).exit_code == 2  # not a results folder


def test_leakage_refuses_a_folder_without_its_ground_truth(tmp_path):
    """Scoring without the ground truth would silently drop rows: refused, naming the file."""
    out = tmp_path / "res"
    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=out))
    assert runner.invoke(app, ["run", str(scen)]).exit_code == 0
    (out / "transcript" / "truth-ppknn-ring.npz").unlink()
    result = runner.invoke(app, ["leakage", str(out)])
    assert result.exit_code == 2, result.output
    assert "truth-ppknn-ring.npz" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_bad_scenario_exits_2_with_message(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text("[protocol]\nk = 0\n")
    result = runner.invoke(app, ["run", str(scen)])
    assert result.exit_code == 2
    assert "protocol.k = 0" in result.output


def test_leakage_on_non_results_folder(tmp_path):
    result = runner.invoke(app, ["leakage", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a results folder" in result.output


def test_quickstart_file_is_the_embedded_default():
    from pathlib import Path

    from ppknn.cli import embedded_quickstart

    path = Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.toml"
    packaged = Path(__file__).resolve().parent.parent / "simulations" / "quickstart.toml"
    assert path.read_text() == packaged.read_text()
    assert load_scenario(path) == embedded_quickstart()
    assert embedded_quickstart().data.bounds != "data"  # declared: no warning of its own


@pytest.mark.ray
def test_quickstart_runs_on_ray(ray_local, tmp_path):
    result = runner.invoke(app, ["run", "--output", str(tmp_path / "q")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "q" / "summary.json").read_text())
    assert summary["runtime"] == "ray" and summary["channels"] == "on"
    assert summary["accuracy_ppknn"] > 0.8


@pytest.mark.parametrize("n", [5, 60])
def test_summary_plot_for_few_and_many_parties(tmp_path, n):
    """Up to 40 parties each is labelled; beyond, sorted curves (a 10,000-party run's
    plot stays readable and quick)."""
    from ppknn.simulations.pipeline import write_results
    from ppknn.simulations.results import MAX_LABELLED_PARTIES
    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario

    sc = parse_scenario({"run": {"name": "plot", "seed": 1}, "data": {"dataset": "pima",
                                                                      "max_queries": 30},
                         "parties": {"n": n}, "protocol": {"k": 3},
                         "runtime": {"kind": "inprocess", "channels": False}})
    outcome = execute(sc, transcript_dir=tmp_path / "t")
    assert (len(outcome.outcome.leakage.parties) > MAX_LABELLED_PARTIES) == (n > 40)
    write_results(outcome, tmp_path / "out")
    words = figure_texts(tmp_path / "out" / "summary.svg")
    assert "plot-1: pima" in words and "KiB on the wire" in words


def test_set_keys_that_depend_on_each_other_change_together(tmp_path):
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "dp-knn.toml"
    result = runner.invoke(app, ["run", str(scenario), "--runtime", "inprocess",
                                 "--output", str(tmp_path / "o"),
                                 "--set", "data.max_queries=16",
                                 "--set", 'protocol.task="knn"',
                                 "--set", 'protocol.algorithm="interactive"'])
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "o" / "scenario.json").read_text())["protocol"]
    assert (saved["task"], saved["algorithm"]) == ("knn", "interactive")


def test_a_detected_deviation_keeps_the_honest_run_and_the_deviant_transcript(tmp_path):
    """The drop-out fails the deviant run (detected): the folder holds the honest twin's
    results, scorable, and the deviant transcript up to its failure beside it."""
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / \
        "deviation_ring_drop_out.toml"
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(scenario), "--runtime", "inprocess",
                                 "--output", str(out), "--set", "data.max_queries=20",
                                 "--set", "runtime.party_timeout_s=2"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "deviations.json").read_text())
    assert report["detected"] is True and "PartyFailure" in report["detected_by"]
    assert (out / "transcript-deviant" / "failure.json").is_file()
    assert not (out / "transcript" / "failure.json").exists()
    assert not (out / "failure.json").exists()
    before = (out / "leakage.csv").read_bytes()
    again = runner.invoke(app, ["leakage", str(out)])
    assert again.exit_code == 0, again.output
    assert (out / "leakage.csv").read_bytes() == before


def test_datasets_names_a_data_directory_without_a_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("PPKNN_DATA_DIR", str(tmp_path / "typo"))
    result = runner.invoke(app, ["datasets"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "PPKNN_DATA_DIR" in result.output and "does not exist" in result.output


def test_a_warning_is_printed_once_per_run(tmp_path):
    """bounds = "data" warns in the deviant run and in its honest twin: printed once."""
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / \
        "deviation_ring_never_randomise.toml"
    result = runner.invoke(app, ["run", str(scenario), "--runtime", "inprocess",
                                 "--output", str(tmp_path / "o"), "--set", "data.max_queries=10",
                                 "--set", 'data.bounds="data"'])
    assert result.exit_code == 0, result.output
    assert result.output.count("warning:") == 1, result.output


def test_run_plots_unless_told_not_to_and_show_plots_from_the_folder(tmp_path):
    drawn = tmp_path / "drawn"
    scen = tmp_path / "d.toml"
    scen.write_text(SMALL.format(out=drawn))
    result = runner.invoke(app, ["run", str(scen)])  # not a terminal: the figures all the same
    assert result.exit_code == 0, result.output
    assert "plots_s" in json.loads((drawn / "summary.json").read_text())["timings_s"]
    assert "summary.svg, leakage.svg, summary.json" in _flat_output(result)
    out = tmp_path / "res"
    scen = tmp_path / "s.toml"
    scen.write_text(SMALL.format(out=out))
    result = runner.invoke(app, ["run", str(scen), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert not (out / "summary.svg").exists() and not (out / "leakage.svg").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert "plots_s" not in summary["timings_s"] and summary["timings_s"]["leakage_s"] >= 0
    assert f"ppknn show --plot {out}" in _flat_output(result)
    shown = runner.invoke(app, ["show", str(out), "--plot"])
    assert shown.exit_code == 0, shown.output
    assert f"{summary['run_id']}: " in figure_texts(out / "summary.svg")
    assert f"leakage: {summary['run_id']}" in figure_texts(out / "leakage.svg")
    assert json.loads((out / "summary.json").read_text()) == summary  # nothing else changed
    refused = runner.invoke(app, ["show", str(out / "transcript"), "--plot"])
    assert refused.exit_code == 2 and "not a results folder" in _flat_output(refused)


def _flat_output(result) -> str:
    return " ".join(result.output.split())
