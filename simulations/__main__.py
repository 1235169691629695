"""``python -m ppknn.simulations`` is the ``ppknn`` command (as is ``python -m ppknn``)."""

from ppknn.simulations.cli import main

main()
