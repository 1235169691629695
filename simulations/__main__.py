"""``python -m simulations`` is the ``ppknn`` command."""

from simulations.cli import main

main()
