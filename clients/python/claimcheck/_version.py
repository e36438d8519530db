"""The client's version: the one place it is written. pyproject.toml reads it
(``[tool.setuptools.dynamic]``), ``claimcheck.__version__`` exports it, and
the User-Agent of every request carries it."""

__version__ = "0.1.0"
