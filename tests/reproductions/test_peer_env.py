"""The peers' environment helper: found when every module imports, refused with the command."""

import sys
from importlib.metadata import version
from pathlib import Path

from ppknn_reproductions.experiments import peer_env


def test_versions_of_modules_that_import_and_none_when_one_does_not():
    python = Path(sys.executable)
    assert peer_env.versions(python, ("numpy",)) == {"numpy": version("numpy")}
    assert peer_env.versions(python, ("numpy", "no_such_module_here")) is None
    assert peer_env.versions(Path("/nonexistent/bin/python"), ("numpy",)) is None


def test_a_missing_environment_is_not_made_unless_asked(tmp_path):
    venv = tmp_path / "peers"
    python, found, message = peer_env.ensure(venv, ("x",), ("numpy",), create=False,
                                             what="the peers", how="make-it --install")
    assert (python, found) == (None, None)
    assert "the peers is not installed in" in message and "make-it --install" in message
    assert not venv.exists()
    assert peer_env.python_of(venv).parent.parent == venv
