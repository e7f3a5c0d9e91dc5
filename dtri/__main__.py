"""``python -m dtri`` is the ``dtri`` command."""

from dtri.cli import main

if __name__ == "__main__":
    main()
