"""The one error type users see from bad input.

`BomcmcError` subclasses `ValueError`, so `except ValueError` catches it; the CLI prints its
message as one line and exits non-zero.
"""


class BomcmcError(ValueError):
    """Bad input: a wrong shape, non-finite data, an unknown name, a malformed run directory."""


def first_line(e: BaseException) -> str:
    """`Type: first line of the message` of an exception from user code, for a one-line
    BomcmcError that says what went wrong without its traceback."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__
