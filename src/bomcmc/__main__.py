"""`python -m bomcmc ...`: the same as the `bomcmc` command."""

from .cli.main import entry

if __name__ == "__main__":
    entry()
