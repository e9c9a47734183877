"""`python -m bomcmc ...`: the same as the `bomcmc` command."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
