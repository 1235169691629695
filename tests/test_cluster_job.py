"""The README's cluster recipe, for real: a head on loopback, ``ray job submit``, a CSV dataset.

A head node is started with ``ray start --head`` and token authentication (a token made
by ``ray get-auth-token --generate`` in a private ``HOME``, so it is not the user's;
``RAY_AUTH_MODE=token``; its own temp dir and ports). A job running ``ppknn run`` on a
scenario whose dataset is a CSV file named by URI is submitted with ``ray job submit``
from a client that sets ``RAY_AUTH_MODE=token``; it must succeed and write its results
folder. The head (and only it: its process group) is stopped whatever happens.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ppknn.core.data import SHIPPED_DIR

pytestmark = [pytest.mark.slow, pytest.mark.ray]

RAY = Path(sys.executable).with_name("ray")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ray start --head exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    pytest.fail(f"the head's dashboard did not open port {port} in {timeout} s")


AGENT_NOT_READY = "No available agent to submit job, please try again later"


def _submit(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """``ray job submit``, tried again (for up to 60 s) while the head says its job agent is
    not registered yet and to try again later (a head just started, on a loaded machine)."""
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300,
                              cwd=cwd)
        if (done.returncode == 0 or AGENT_NOT_READY not in done.stdout + done.stderr
                or time.monotonic() > deadline):
            return done
        time.sleep(2)


def _stop(proc: subprocess.Popen, temp: Path) -> None:
    """Stop this head only: its process group, then any process still naming its temp dir."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(temp).encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture
def head(tmp_path):
    pytest.importorskip("ray.dashboard", reason="needs ray[default] (the cluster extra)")
    if not RAY.is_file():
        pytest.skip(f"no ray command beside {sys.executable}")
    temp = Path(tempfile.mkdtemp(prefix="rayj", dir="/tmp"))  # short: socket paths
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), PATH=f"{RAY.parent}{os.pathsep}{env.get('PATH', '')}")
    gcs, dash, client, agent_http, agent_grpc, rt_env, metrics, nm, om = _free_ports(9)
    start = [str(RAY), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
             f"--port={gcs}", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}",
             f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent_http}",
             f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={rt_env}",
             f"--metrics-export-port={metrics}", f"--node-manager-port={nm}",
             f"--object-manager-port={om}", "--num-cpus=2", f"--temp-dir={temp}",
             "--disable-usage-stats"]
    # the README's recipe: a token for the cluster, token mode on the head and clients
    token = subprocess.run([str(RAY), "get-auth-token", "--generate"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert token.returncode == 0 and (home / ".ray" / "auth_token").is_file(), token.stderr
    env["RAY_AUTH_MODE"] = "token"
    # --block keeps the head in one process group of its own, so only it is stopped
    proc = subprocess.Popen(start, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for_port(dash, proc, timeout=120)
        _wait_for_port(agent_http, proc, timeout=120)  # the agent that takes the jobs
        yield {"env": env, "address": f"http://127.0.0.1:{dash}"}
    finally:
        _stop(proc, temp)
        shutil.rmtree(temp, ignore_errors=True)


def test_job_on_a_csv_dataset_named_by_uri_writes_its_results(head, tmp_path):
    csv = tmp_path / "pima.csv"  # the shipped file, uncompressed: a user's own CSV
    csv.write_bytes(gzip.decompress((SHIPPED_DIR / "pima.csv.gz").read_bytes()))
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "pima.toml").write_text(f"""
[run]
name = "pima-job"
[data]
dataset = "{csv.as_uri()}?label=outcome"
max_queries = 30
bounds = {{ lower = [0, 0, 0, 0, 0, 0, 0, 0], upper = [20, 200, 130, 100, 900, 70, 2.5, 90] }}
[parties]
n = 3
[runtime]
kind = "ray"
layout = "hosted"
hosts = 1
""")
    out = tmp_path / "results"
    client_env = dict(head["env"], RAY_AUTH_MODE="token")  # the README's client setting
    submit = [str(RAY), "job", "submit", "--address", head["address"],
              "--working-dir", str(job_dir), "--",
              sys.executable, "-m", "ppknn", "run", "pima.toml", "--address", "auto",
              "--output", str(out)]
    done = _submit(submit, client_env, tmp_path)
    logs = done.stdout + done.stderr
    assert done.returncode == 0, logs
    assert "succeeded" in logs
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runtime"] == "ray" and summary["dataset"] == "pima"
    assert summary["queries"] == 30 and (out / "transcript" / "totals.json").is_file()


ROOT = Path(__file__).resolve().parents[1]


def _readme_submits() -> list[str]:
    """The README's `ray job submit` lines of "On a real cluster", as they stand."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### On a real cluster"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines()
            if line.startswith("ray job submit")]


def test_the_readme_cluster_recipe_runs_as_written(head, tmp_path):
    """Both `ray job submit` lines, from the checkout's root (its ppknn/ folder is uploaded
    with the working directory), against a token-authenticated head: each job succeeds and
    its results folder is where --output says."""
    lines = _readme_submits()
    assert len(lines) == 2 and all("--working-dir ." in line for line in lines), lines
    results = tmp_path / "ppknn-results"
    client_env = dict(head["env"], RAY_AUTH_MODE="token")
    for line in lines:
        command = (line.replace("http://<head>:8265", head["address"])
                   .replace("/tmp/ppknn-results", str(results)))
        argv = shlex.split(command)
        argv[0] = str(RAY)
        done = _submit(argv, client_env, ROOT)
        logs = done.stdout + done.stderr
        assert done.returncode == 0, logs
        assert "succeeded" in logs, logs
    quick = json.loads((results / "quickstart" / "summary.json").read_text())
    ring = json.loads((results / "ppknn-ring" / "summary.json").read_text())
    assert quick["runtime"] == "ray" and quick["dataset"] == "sklearn:breast_cancer"
    assert ring["runtime"] == "ray" and ring["dataset"] == "pima"
