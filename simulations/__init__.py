"""Scenarios, runner, results and the ``ppknn`` command line."""
