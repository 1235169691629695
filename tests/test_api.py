"""The public Python API: ``import ppknn`` is light; run / sweep / leakage / load_scenario."""

from __future__ import annotations

import doctest
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

import ppknn
from ppknn.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
IRIS = {"data": {"dataset": "sklearn:iris", "max_queries": 20,
                 "bounds": {"lower": [4, 2, 1, 0], "upper": [8, 4.5, 7, 2.5]}},
        "parties": {"n": 3}, "protocol": {"name": "ppknn-ring", "k": 3},
        "runtime": {"kind": "inprocess"}}


def test_import_is_light_and_lazy():
    code = ("import sys, ppknn; heavy = [m for m in sys.modules if m.startswith("
            "('ppknn.simulations', 'ray', 'sklearn', 'matplotlib'))]; print(heavy, "
            "ppknn.__version__); ppknn.run; print('ppknn.simulations.runner' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0].startswith("[] ") and out[0].split()[-1] not in ("", "0+unknown")
    assert out[1] == "True"


def test_public_names_and_registry():
    for name in ppknn.__all__:
        assert getattr(ppknn, name) is not None, name
    assert ppknn.protocol_names() == ppknn.registry.names()
    assert "ppknn-ring" in ppknn.protocol_names()
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ppknn.nope  # noqa: B018


def test_api_docstring_examples_run():
    import ppknn.api

    failures, tried = doctest.testmod(ppknn.api, optionflags=doctest.ELLIPSIS
                                      | doctest.NORMALIZE_WHITESPACE)
    assert tried > 5 and failures == 0


def _temp_transcripts() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "ppknn-transcript-*")))


def test_run_from_a_dict_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = _temp_transcripts()
    result = ppknn.run(IRIS)
    assert result.output is None and list(tmp_path.iterdir()) == []
    assert _temp_transcripts() == before
    assert isinstance(result.predictions, pa.Table) and result.predictions.num_rows == 20
    assert isinstance(result.parties, pa.Table) and result.parties.num_rows == 3
    assert result.transcript.num_rows > 0
    assert result.summary["results"]["ppknn-ring"]["accuracy"] == result.accuracy
    assert result.leakage["ppknn-ring"].mean_probability >= 0.0


def test_run_from_toml_path_and_model_agree(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[data]\ndataset = "sklearn:iris"\nmax_queries = 20\n'
                    'bounds = { lower = [4, 2, 1, 0], upper = [8, 4.5, 7, 2.5] }\n'
                    '[parties]\nn = 3\n[protocol]\nk = 3\n[runtime]\nkind = "inprocess"\n')
    from_path = ppknn.run(path)
    from_model = ppknn.run(ppknn.load_scenario(IRIS))
    assert from_path.predictions.equals(from_model.predictions)
    changed = ppknn.run(path, overrides={"protocol.k": 1})
    assert changed.scenario.protocols[0].k == 1


def test_run_with_output_writes_the_folder_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "r"
    result = ppknn.run(IRIS, output=out, overrides={"protocol.k": 1})
    assert result.output == out
    assert {"summary.json", "predictions.csv", "transcript"} <= {p.name for p in out.iterdir()}
    with pytest.raises(ConfigError, match="already holds results"):
        ppknn.run(IRIS, output=out)  # refused before any party starts
    from_folder = ppknn.leakage(out)["ppknn-ring"]
    assert from_folder.mean_probability == result.leakage["ppknn-ring"].mean_probability
    assert json.loads((out / "summary.json").read_text())["run_id"] == result.summary["run_id"]
    # the result reads its transcript where the folder is now (not the staging folder)
    in_memory = ppknn.run(IRIS, overrides={"protocol.k": 1})
    assert result.run.transcript_dir == out / "transcript"
    assert result.transcript.num_rows == in_memory.transcript.num_rows > 0
    again = result.write(tmp_path / "again")
    assert ppknn.leakage(again)["ppknn-ring"].mean_probability == \
        from_folder.mean_probability


def test_result_write_keeps_the_in_memory_transcript(tmp_path):
    result = ppknn.run(IRIS)
    folder = result.write(tmp_path / "w")
    report = ppknn.leakage(folder)["ppknn-ring"]
    assert report.mean_probability == result.leakage["ppknn-ring"].mean_probability
    # the ground truth is written beside the copied transcript: the whole table, secure-sum
    # rows included, is recomputed from the folder
    from ppknn.simulations.leakage import recompute, write_table

    assert (folder / "transcript" / "truth-ppknn-ring.npz").is_file()
    again = write_table(recompute(folder), tmp_path / "again.csv")
    assert again.read_bytes() == (folder / "leakage.csv").read_bytes()
    assert b"secure-sum-neighbours" in again.read_bytes()


def test_run_performs_the_deviation_a_scenario_asks_for_as_the_cli_does(tmp_path):
    """``[[deviation]]`` is run, not ignored: the deviant run beside its honest twin, the
    report on the result and in the folder, byte-identical to ``ppknn run``'s."""
    from typer.testing import CliRunner

    from ppknn.cli import app

    scenario = ROOT / "scenarios" / "deviation_ring_reuse_mask.toml"
    smaller = {"data.max_queries": 30}
    result = ppknn.run(scenario, overrides=smaller, output=tmp_path / "api")
    report = result.deviations
    assert report is not None and [d["kind"] for d in report.deviations] == ["reuse-mask"]
    assert "reuse-mask" in repr(result)
    # the mask reused: the scripted attack reads partial sums in the deviant run alone
    reuse = [r for r in report.leakage if r["attack"] == "mask-reuse"]
    assert reuse and max(r["deviant"] for r in reuse) > max(r["honest"] for r in reuse)
    cli = CliRunner().invoke(app, ["run", str(scenario), "--set", "data.max_queries=30",
                                   "--output", str(tmp_path / "cli")])
    assert cli.exit_code == 0, cli.output
    for name in ("deviations.json", "deviations.csv", "leakage.csv", "predictions.csv"):
        assert ((tmp_path / "api" / name).read_bytes()
                == (tmp_path / "cli" / name).read_bytes()), name
    # and written again from memory
    result_in_memory = ppknn.run(scenario, overrides=smaller)
    folder = result_in_memory.write(tmp_path / "w")
    assert ((folder / "deviations.json").read_bytes()
            == (tmp_path / "cli" / "deviations.json").read_bytes())


def test_run_performs_the_audit_a_scenario_asks_for(tmp_path):
    """``[audit] trials``: the audit rows on the result and audit.csv in the folder."""
    from .test_audit import nb

    data = nb()
    data["audit"] = {"trials": 100}
    result = ppknn.run(data, output=tmp_path / "a")
    assert result.audit is not None and len(result.audit) == 1
    (audit,) = result.audit
    assert audit.row.protocol == "dp-nb" and audit.row.bound == 1.0
    assert (tmp_path / "a" / "audit.csv").is_file()
    again = ppknn.run(data).audit[0].row  # seeded: the same bound
    assert (again.value, again.ci_low, again.verdict) == (audit.row.value, audit.row.ci_low,
                                                          audit.row.verdict)


@pytest.mark.parametrize("protocol", ["dp-knn", "ppknn-ring"])
def test_leakage_table_in_memory_is_the_folders_leakage_csv(tmp_path, protocol):
    """Every protocol's rows, in memory and from the folder, equal leakage.csv; the result's
    summary carries the same leakage section as summary.json."""
    from ppknn.simulations.leakage.table import read_table, rows_equal
    from ppknn.simulations.reporting.csvio import write_rows

    scenario = ROOT / "scenarios" / f"{protocol}.toml"
    smaller = {"data.max_queries": 20, "runtime.kind": "inprocess"}
    written = ppknn.run(scenario, overrides=smaller, output=tmp_path / "r")
    in_memory = ppknn.run(scenario, overrides=smaller)
    saved = read_table(tmp_path / "r" / "leakage.csv")
    assert len(saved) > 0
    for table in (in_memory.leakage_table, ppknn.leakage_table(tmp_path / "r"),
                  ppknn.leakage_table(written)):
        assert table.num_rows == len(saved)
        assert table.column_names == list(saved[0])
        write_back = tmp_path / "t.csv"
        write_rows(write_back, table.to_pylist())
        assert rows_equal(read_table(write_back), saved)
    on_disk = json.loads((tmp_path / "r" / "summary.json").read_text())["leakage"]
    assert json.loads(json.dumps(in_memory.summary["leakage"])) == on_disk
    with pytest.raises(ConfigError, match="give a Result"):
        ppknn.leakage_table(42)


def test_sweep_returns_one_row_per_run_and_writes_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = {"sweep": {"name": "api", "seeds": [0, 1]}, "base": {k: v for k, v in IRIS.items()
                                                              if k != "runtime"},
            "grid": {"protocol.k": [1, 3]}}
    table = ppknn.sweep(spec, parallel="sequential")
    assert table.num_rows == 4 and len(set(table.column("run_id").to_pylist())) == 4
    assert list(tmp_path.iterdir()) == []
    ppknn.sweep(spec, parallel="sequential", output=tmp_path / "sw")
    assert (tmp_path / "sw" / "sweep.csv").is_file()


@pytest.mark.parametrize("bad, message", [
    (42, "scenario = 42"),
    ({"protocol": {"name": "nope"}}, "unknown protocol"),
    ({"data": {"datset": "x"}}, "datset"),
])
def test_bad_scenarios_are_config_errors(bad, message):
    with pytest.raises(ConfigError, match=message):
        ppknn.run(bad)


def test_bad_sweep_parallel_and_leakage_folder(tmp_path):
    with pytest.raises(ConfigError, match="parallel = 'threads'"):
        ppknn.sweep({"grid": {"protocol.k": [1]}}, parallel="threads")
    with pytest.raises(ConfigError, match="not a results folder"):
        ppknn.leakage(tmp_path)


def test_python_dash_m_ppknn_is_the_cli():
    out = subprocess.run([sys.executable, "-m", "ppknn", "--version"], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    assert out.stdout.startswith(f"ppknn {ppknn.__version__}")


def test_a_run_that_fails_after_its_protocol_says_where_its_scorable_record_is(tmp_path,
                                                                             monkeypatch):
    """``run(output=...)``: an error while scoring propagates, naming the folder that keeps
    the run (an attribute and, on Python 3.11+, a note), and the folder is scored."""
    from ppknn.simulations.leakage import measure

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a broken scorer")

    out = tmp_path / "r"
    with monkeypatch.context() as mp:
        mp.setattr(measure, "score", broken)
        with pytest.raises(ZeroDivisionError) as caught:
            ppknn.run(IRIS, output=out)
    assert caught.value.kept_folder == out
    if sys.version_info >= (3, 11):
        assert any(str(out) in note for note in caught.value.__notes__)
    report = ppknn.leakage(out)["ppknn-ring"]
    assert report.mean_probability == ppknn.run(IRIS).leakage["ppknn-ring"].mean_probability


def test_overrides_act_as_if_written_in_the_scenario():
    """A changed protocol.name takes the new protocol's defaults (the old one's filled-in
    defaults were unknown keys to it); dependent keys change together, validated once."""
    sc = ppknn.load_scenario({"protocol": {"name": "ppknn-ring"}},
                             overrides={"protocol.name": "dp-knn"})
    assert sc.protocols[0].name == "dp-knn"
    knn = ppknn.load_scenario(ROOT / "scenarios" / "dp-knn.toml",
                              overrides={"protocol.task": "knn",
                                         "protocol.algorithm": "interactive"})
    assert (knn.protocols[0].task, knn.protocols[0].algorithm) == ("knn", "interactive")
    # keys the file wrote are kept, and still checked against the new protocol
    with pytest.raises(ConfigError, match="unknown key 'protocol.rounds'"):
        ppknn.load_scenario({"protocol": {"name": "ppknn-ring", "rounds": 2}},
                            overrides={"protocol.name": "dp-knn"})
    with pytest.raises(ConfigError, match="give a mapping"):
        ppknn.load_scenario({}, overrides=[("protocol.k", 3)])


def test_privacy_leak_warnings_repeat_but_obey_the_users_filters():
    """Shown every time (not once per location), unless the user silenced warnings: an
    ``ignore`` filter set before ppknn is imported, or ``python -W ignore``."""
    repeat = ("import warnings\nfrom ppknn.core.errors import PrivacyLeakWarning\n"
              "for _ in range(2):\n    warnings.warn('leak', PrivacyLeakWarning)\n")
    shown = subprocess.run([sys.executable, "-c", repeat], capture_output=True, text=True)
    assert shown.stderr.count("PrivacyLeakWarning") == 2
    quiet = subprocess.run([sys.executable, "-W", "ignore", "-c", repeat],
                           capture_output=True, text=True)
    assert "PrivacyLeakWarning" not in quiet.stderr
    first = "import warnings\nwarnings.simplefilter('ignore')\n" + repeat
    silenced = subprocess.run([sys.executable, "-c", first], capture_output=True, text=True)
    assert "PrivacyLeakWarning" not in silenced.stderr


def test_a_mixed_runs_accuracy_points_at_the_results_own_method():
    mixed = ppknn.run(ROOT / "scenarios" / "mixed.toml",
                      overrides={"data.max_queries": 12, "runtime.kind": "inprocess"})
    with pytest.raises(ConfigError, match=r"use result\.outcome\(name\)\.accuracy"):
        _ = mixed.accuracy
    name = mixed.protocols[0]
    assert 0.0 <= mixed.outcome(name).accuracy <= 1.0


def test_a_progress_that_cannot_be_called_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="progress = 3"):
        ppknn.run(IRIS, output=tmp_path / "r", progress=3)
    assert not (tmp_path / "r").exists() and list(tmp_path.iterdir()) == []
