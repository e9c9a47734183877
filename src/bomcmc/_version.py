"""The package's version, read by `bomcmc.__version__`, the run files and pyproject.toml."""

__version__ = "0.1.0"
