"""`ppknn reproduce NAME --quick` never touches tracked files (reports go to the output folder)."""

from __future__ import annotations

import pytest

from ppknn.simulations.reproduce import names

OWN = ("gursoy", "lepert", "mukherjee", "xiong", "zafarani")
"""ppknn's own reproductions (``ppknn_reproductions``); other installed ones are not run here."""


def test_ppknn_s_reproductions_are_registered():
    assert set(OWN) <= set(names())


@pytest.mark.slow
@pytest.mark.parametrize("name", OWN)
def test_quick_reproduction_leaves_tracked_files_alone(name, quick_reproduction):
    # the session's one CLI run of each quick reproduction (tests/conftest.py), from the
    # checkout as a user would run it; the reproductions' own tests read the same run
    run = quick_reproduction(name)
    assert run.exit_code == 0, run.cli_output
    assert run.report.is_file()
    assert run.tracked_after == run.tracked_before
