"""The version of dtri (``dtri.__version__``), which saves and checkpoints record."""

VERSION = "0.1.0"
