"""``python -m ppknn`` is the ``ppknn`` command."""

from ppknn.cli import main

if __name__ == "__main__":
    main()
