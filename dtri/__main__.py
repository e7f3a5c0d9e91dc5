"""``python -m dtri`` is the ``dtri`` command."""

from dtri.cli import run

if __name__ == "__main__":
    run()
