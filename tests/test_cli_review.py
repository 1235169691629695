"""The command line's review defects: bad input refused up front, outputs never silently
replaced, Rich markup never eating data, readable tables, `show` on every folder kind.

Every test runs in-process (no Ray); the few real runs are tiny.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ppknn import cli
from ppknn.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


def invoke(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def one_paragraph_error(result) -> str:
    """The error text, checked to be one ``error:`` paragraph and exit code 2."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return " ".join(result.output.split())


def ray_is_running() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """One tiny in-process quickstart run (copied by the tests that change it)."""
    folder = tmp_path_factory.mktemp("run") / "q"
    result = runner.invoke(app, ["run", "--runtime", "inprocess", "--output", str(folder),
                                 "--set", "data.max_queries=12", "--set", "parties.n=3"])
    assert result.exit_code == 0, result.output
    return folder


def copy_of(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / folder.name
    shutil.copytree(folder, target)
    return target


# ------------------------------------------------------------------------------ 1. compare
def test_compare_refuses_a_spec_together_with_quick(tmp_path):
    result = invoke("compare", SCENARIOS / "compare.toml", "--quick", "--output", tmp_path / "c")
    text = one_paragraph_error(result)
    assert "compare.toml" in text and "--quick" in text and "not both" in text
    assert not (tmp_path / "c").exists()


def test_compare_inprocess_skips_the_ray_cells_with_a_note(tmp_path, monkeypatch):
    spec = tmp_path / "spec.toml"
    spec.write_text("""
[compare]
name = "tiny"
datasets = ["sklearn:iris"]
seeds = [0]
parallel = "sequential"

[compare.runtime_compare]
seeds = [0]

[base]
data = { scale = "minmax", max_queries = 12, bounds = "data" }

[[protocol]]
name = "dp-nb"
privacy_key = "epsilon"
levels = [1.0]
""")
    import ray

    from ppknn.core.runtime import ray_runtime

    def no_ray(*args, **kwargs):  # (another test may have left a Ray instance running)
        raise AssertionError("compare --runtime inprocess used Ray")

    before = ray_is_running()
    monkeypatch.setattr(ray, "init", no_ray)
    monkeypatch.setattr(ray_runtime.RayRuntime, "__init__", no_ray)
    result = invoke("compare", spec, "--runtime", "inprocess", "--output", tmp_path / "out")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "1 cell of [compare.runtime_compare] is not rerun on Ray" in flat
    assert "starting Ray" not in result.output and ray_is_running() == before
    assert (tmp_path / "out" / "compare.parquet").is_file()
    shown = " ".join(invoke("show", tmp_path / "out").output.split())
    assert "sklearn:iris" in shown and "epsilon = 1" in shown


# -------------------------------------------------------------------------------- 2. audit
def test_audit_takes_the_runtime_choice_of_run():
    result = invoke("audit", SCENARIOS / "dp-nb.toml", "--runtime", "docker")
    assert result.exit_code == 2
    assert "'docker' is not one of 'inprocess', 'ray'" in result.output
    assert "Value error" not in result.output


@pytest.mark.parametrize("existing", ["folder", "file"])
def test_audit_refuses_an_existing_output_before_any_work(tmp_path, monkeypatch, existing):
    from ppknn.simulations.leakage import audit

    def no_work(*args, **kwargs):
        raise AssertionError("the audit ran before its output was checked")

    monkeypatch.setattr(audit, "audit_scenario", no_work)
    target = tmp_path / "a"
    if existing == "folder":
        target.mkdir()
        (target / "audit.json").write_text("{}")
    else:
        target.write_text("mine")
    result = invoke("audit", SCENARIOS / "dp-nb.toml", "--output", target, "--runtime",
                    "inprocess")
    text = one_paragraph_error(result)
    assert repr(str(target)) in text
    assert ("--overwrite" in text) if existing == "folder" else ("file" in text)


def test_audit_overwrite_replaces_the_folder_once_the_new_audit_is_written(tmp_path,
                                                                            monkeypatch):
    from ppknn.simulations.leakage import audit
    from ppknn.simulations.leakage.table import LeakageRow

    target = tmp_path / "a"
    target.mkdir()
    (target / "audit.json").write_text('{"old": true}')
    (target / "stale.txt").write_text("from the old audit")
    row = LeakageRow(protocol="dp-nb", observer="analyst", target="owner row 0",
                     attack="audit (neighbouring inputs)", quantity="ε lower bound", value=0.5,
                     ci_low=0.5, ci_high=float("nan"), trials=200, bound=1.0)

    def fake(scenario, **kwargs):
        assert (target / "stale.txt").is_file()  # the old folder stays while the audit runs
        return [SimpleNamespace(row=row, hits=(3, 1))]

    monkeypatch.setattr(audit, "audit_scenario", fake)
    result = invoke("audit", SCENARIOS / "dp-nb.toml", "--output", target, "--runtime",
                    "inprocess", "--overwrite", "--replay")  # the patched (replay) audit
    assert result.exit_code == 0, result.output
    assert not (target / "stale.txt").exists()
    assert json.loads((target / "audit.json").read_text())["rows"][0]["value"] == 0.5
    shown = invoke("show", target)
    assert shown.exit_code == 0 and "audit (neighbouring inputs)" in shown.output


# -------------------------------------------------------------------------------- 3. chaos
def test_chaos_refuses_an_unknown_method_listing_the_partys_methods(tmp_path):
    result = invoke("chaos", SCENARIOS / "dp-nb.toml", "--runtime", "inprocess", "--method",
                    "nomethod", "--output", tmp_path / "ch")
    text = one_paragraph_error(result)
    assert "'nomethod'" in text and "its methods: receive, request" in text
    assert not (tmp_path / "ch").exists()


def test_chaos_runtime_is_the_same_choice_as_run():
    result = invoke("chaos", SCENARIOS / "dp-nb.toml", "--runtime", "local")
    assert result.exit_code == 2 and "'local' is not one of 'inprocess', 'ray'" in result.output
    assert "--runtime <inprocess|ray>" in invoke("chaos", "--help").output


# ---------------------------------------------------------------------------- 4. reproduce
class FakeReproduction:
    """Stands in for a reproduction module: records its calls, keeps rows like zafarani."""

    def __init__(self, fail: bool = False):
        self.calls: list[Path] = []
        self.fail = fail

    def run(self, output, *, quick, runtime, report, log=None):
        output = Path(output)
        self.calls.append(output)
        store = output / "grid-rows" / "accuracy.jsonl"
        store.parent.mkdir(parents=True, exist_ok=True)
        if store.is_file() and log is not None:
            log(f"accuracy: reusing the finished runs in {store}")
        with store.open("a") as handle:
            handle.write('{"key": "k", "row": {}}\n')
        if self.fail:
            raise KeyboardInterrupt
        (output / "figure.csv").write_text("x\n1\n")
        Path(report).write_text("# report\n")
        return Path(report)


@pytest.fixture
def fake_reproduction(monkeypatch):
    from ppknn.simulations import reproduce

    def install(fail: bool = False) -> FakeReproduction:
        fake = FakeReproduction(fail)
        monkeypatch.setattr(reproduce, "load", lambda name: fake)
        return fake

    return install


def test_reproduce_refuses_a_finished_folder_without_overwrite(tmp_path, fake_reproduction):
    folder = tmp_path / "x"
    fake_reproduction()
    assert invoke("reproduce", "xiong", "--output", folder).exit_code == 0
    fake = fake_reproduction()
    text = one_paragraph_error(invoke("reproduce", "xiong", "--output", folder))
    assert "finished reproduction" in text and "--overwrite" in text
    assert fake.calls == []


def test_reproduce_resumes_an_unfinished_folder_with_a_note(tmp_path, fake_reproduction):
    folder = tmp_path / "x"
    fake_reproduction(fail=True)
    interrupted = invoke("reproduce", "xiong", "--output", folder)
    assert interrupted.exit_code == 130 and (folder / "failure.json").is_file()
    fake = fake_reproduction()
    result = invoke("reproduce", "xiong", "--output", folder)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "resuming it, reusing its 1 finished run" in flat
    assert fake.calls == [folder]  # in place: the kept rows are read where they are
    assert "cli.py" not in result.output  # log lines carry no source path
    assert not (folder / "failure.json").exists() and (folder / "xiong.md").is_file()
    assert len((folder / "grid-rows" / "accuracy.jsonl").read_text().splitlines()) == 2


def test_reproduce_overwrite_starts_afresh_and_replaces_only_at_the_end(tmp_path,
                                                                       fake_reproduction):
    folder = tmp_path / "x"
    fake_reproduction(fail=True)
    invoke("reproduce", "xiong", "--output", folder)
    fake = fake_reproduction()
    result = invoke("reproduce", "xiong", "--output", folder, "--overwrite")
    assert result.exit_code == 0, result.output
    assert fake.calls and fake.calls[0] != folder  # a staging folder: the old one stays
    assert len((folder / "grid-rows" / "accuracy.jsonl").read_text().splitlines()) == 1


def test_reproduce_refused_by_the_reproduction_itself_leaves_nothing(tmp_path, monkeypatch):
    from ppknn.core.errors import ConfigError
    from ppknn.simulations import reproduce

    def refuse(output, **kwargs):
        raise ConfigError("n_points = -1: must be positive")

    monkeypatch.setattr(reproduce, "load", lambda name: SimpleNamespace(run=refuse))
    text = one_paragraph_error(invoke("reproduce", "xiong", "--output", tmp_path / "x"))
    assert "n_points = -1" in text and not (tmp_path / "x").exists()


def test_reproduce_hidden_ray_flag_cannot_contradict_runtime(tmp_path, fake_reproduction):
    fake = fake_reproduction()
    result = invoke("reproduce", "xiong", "--ray", "--runtime", "inprocess", "--output",
                    tmp_path / "x")
    text = one_paragraph_error(result)
    assert "--runtime" in text and fake.calls == []
    assert "--ray" not in invoke("reproduce", "--help").output


def test_sweep_hidden_sequential_flag_cannot_contradict_runtime(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nseeds = [0]\n[base.data]\ndataset = "glass"\n'
                    '[grid]\n"protocol.k" = [1]\n')
    text = one_paragraph_error(invoke("sweep", spec, "--sequential", "--runtime", "ray",
                                      "--output", tmp_path / "o"))
    assert "--sequential means --runtime inprocess" in text and not (tmp_path / "o").exists()


# ------------------------------------------------------------------------- 5. help, choices
@pytest.mark.parametrize("command", ["run", "sweep", "audit", "chaos", "reproduce"])
def test_set_shows_key_value_and_runtime_one_choice(command):
    shown = invoke(command, "--help").output
    assert "--set KEY=VALUE" in shown and "list[str]" not in shown
    assert "--runtime <inprocess|ray>" in shown
    assert "--sequential" not in shown and "--ray " not in shown


def test_leakage_top_help_is_grammatical_and_bad_numbers_are_named():
    shown = " ".join(invoke("leakage", "--help").output.split())
    assert "the this many" not in shown and "Show at most this many parties" in shown
    bad = invoke("leakage", ".", "--top", "0")
    assert bad.exit_code == 2
    assert "'--top': 0 is too small: it must be greater than or equal to 1" in bad.output


# ----------------------------------------------------------------------------- 6. markup
def test_protocols_prints_bracketed_text_verbatim():
    shown = " ".join(invoke("protocols").output.split())
    assert "([protocol] name = ...)" in shown
    assert "([[adversary]] attack = ..." in shown


def test_a_bracketed_folder_name_is_printed_verbatim(finished_run, tmp_path):
    folder = tmp_path / "[red]run"
    shutil.copytree(finished_run, folder)
    shown = invoke("show", folder)
    assert shown.exit_code == 0 and "[red]run" in shown.output


# --------------------------------------------------------------------- 7. failure notes
def test_leakage_note_says_interrupted_when_the_failure_has_no_message(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    (folder / "failure.json").write_text(json.dumps({"error": "KeyboardInterrupt",
                                                     "message": ""}))
    result = invoke("leakage", folder, "--top", "3")
    assert result.exit_code == 0, result.output
    assert "completed (interrupted)" in " ".join(result.output.split())
    assert "()" not in result.output


def test_fail_offers_leakage_only_for_a_folder_check_complete_accepts(finished_run, tmp_path,
                                                                      capsys):
    import typer

    folder = copy_of(finished_run, tmp_path)
    (folder / "failure.json").write_text(json.dumps({"error": "KeyboardInterrupt",
                                                     "message": ""}))
    for truth in (folder / "transcript").glob("truth-*.npz"):
        truth.unlink()  # interrupted while saving the ground truth
    exc = KeyboardInterrupt()
    exc.kept_folder = folder
    with pytest.raises(typer.Exit):
        cli._fail(exc, 130)
    assert "scores it" not in capsys.readouterr().err


# ------------------------------------------------------------------------ 8. damaged files
@pytest.mark.parametrize("content", ['{"dataset": "iris", "par', "[1, 2]", '{"x": 1}'])
def test_show_names_a_damaged_summary(finished_run, tmp_path, content):
    folder = copy_of(finished_run, tmp_path)
    (folder / "summary.json").write_text(content)
    text = one_paragraph_error(invoke("show", folder))
    assert "summary.json" in text


def test_leakage_names_a_damaged_public_json(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    (folder / "public.json").write_text("not json")
    assert "public.json" in one_paragraph_error(invoke("leakage", folder))


def test_run_says_a_directory_is_not_a_scenario_file(tmp_path):
    text = one_paragraph_error(invoke("run", tmp_path))
    assert "is a directory, not a scenario file" in text


# ---------------------------------------------------------------------- 9. show, any kind
def test_show_lists_each_deviation(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    (folder / "deviations.json").write_text(json.dumps({
        "deviations": [{"party": "owner-01", "kind": "reuse-mask", "params": {}}],
        "detected": True, "detected_by": "PartyFailure: owner-01 dropped out",
        "accuracy": {"ppknn-ring": {"honest": 0.75, "deviant": None}},
        "leakage_changes": [{}, {}]}))
    flat = " ".join(invoke("show", folder).output.split())
    assert "deviation: owner-01 reuse-mask: detected: PartyFailure: owner-01 dropped out" in flat
    assert "honest 0.7500, deviant failed" in flat and "2 leakage rows changed" in flat


def test_show_prints_a_chaos_folder(tmp_path):
    rows = [{"kind": kind, "party": "owner-01", "method": "*", "occurrence": 2,
             "error": error, "message": "", "names_party": bool(error), "seconds": 0.1,
             "bound_s": 7.0, "transcript_rows": 6, "closed": True, "ok": bool(error)}
            for kind, error in (("raise", "PartyFailure"), ("drop", ""))]
    (tmp_path / "chaos.json").write_text(json.dumps(rows))
    flat = " ".join(invoke("show", tmp_path).output.split())
    assert "PartyFailure" in flat and "1 of 2 faults failed cleanly" in flat


# ------------------------------------------------------------------------ 10. 80 columns
def test_leakage_table_is_not_truncated_at_80_columns(finished_run, tmp_path, monkeypatch):
    monkeypatch.setattr(cli.out, "width", 80)
    folder = copy_of(finished_run, tmp_path)
    result = invoke("leakage", folder, "--top", "5")
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_chaos_says_when_a_fault_never_fired(tmp_path):
    """nb-analyst-00 sends one request: a drop at its 2nd message never fires, and the table
    says so (the run completing tested nothing); at the 1st it fails the run cleanly."""
    never = invoke("chaos", SCENARIOS / "dp-nb.toml", "--runtime", "inprocess", "--kind", "drop",
                   "--set", "data.max_queries=20", "--output", tmp_path / "never")
    assert never.exit_code == 1, never.output
    assert "the fault never fired" in " ".join(never.output.split())
    (row,) = json.loads((tmp_path / "never" / "chaos.json").read_text())
    assert (row["fired"], row["ok"]) == (False, False)
    fired = invoke("chaos", SCENARIOS / "dp-nb.toml", "--runtime", "inprocess", "--kind", "drop",
                   "--occurrence", "1", "--set", "data.max_queries=20",
                   "--output", tmp_path / "fired")
    assert fired.exit_code == 0, fired.output
    (row,) = json.loads((tmp_path / "fired" / "chaos.json").read_text())
    assert (row["fired"], row["ok"]) == (True, True)
