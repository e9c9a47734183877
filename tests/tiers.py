"""The default run and the slow tier: the default run checks each claim once; the cases that
repeat it on further seeds, posteriors or models run with `-m slow` (README, "Set-up")."""

from __future__ import annotations

from collections.abc import Container, Sequence

import pytest


def by_default(cases: Sequence, keep: int | Container) -> list:
    """`cases` for `pytest.mark.parametrize`, those not kept marked slow. `keep`: how many of
    the first cases stay in the default run, or the cases that stay. A tuple case is the
    arguments of a test with several parameters."""
    def kept(i, case):
        return i < keep if isinstance(keep, int) else case in keep

    def slow(case):
        args = case if isinstance(case, tuple) else (case,)
        return pytest.param(*args, marks=pytest.mark.slow)

    return [case if kept(i, case) else slow(case) for i, case in enumerate(cases)]
