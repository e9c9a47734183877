"""The one error type users see from bad input.

`BomcmcError` subclasses `ValueError`, so `except ValueError` catches it; the CLI prints its
message as one line and exits non-zero.
"""


class BomcmcError(ValueError):
    """Bad input: a wrong shape, non-finite data, an unknown name, a malformed run directory."""
