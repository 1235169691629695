"""Every built-in protocol's plugin imports first in a fresh interpreter.

The registry imports a scenario's plugin on its own (``ppknn run scenarios/ring-nb.toml``
imports ``ring-nb``'s plugin before any other), so a plugin that only imports when
another was imported first (a circle between plugins) fails a user's first command.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PLUGINS = ["ppknn_ring", "ring_nb", "dp_knn", "dp_nb", "dptt", "pca_perturbation"]


@pytest.mark.parametrize("name", PLUGINS)
def test_a_plugin_imports_first_in_a_fresh_interpreter(name):
    done = subprocess.run([sys.executable, "-c", f"import ppknn.protocols.{name}.plugin"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_list_is_every_built_in_plugin():
    from ppknn.simulations import registry

    modules = {type(registry.get(n)).__module__ for n in registry.names()
               if type(registry.get(n)).__module__.startswith(registry.BUILTIN + ".")}
    assert {m.split(".")[2] for m in modules} == set(PLUGINS)
