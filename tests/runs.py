"""Helpers for tests that resume runs."""

from __future__ import annotations

import shutil
from pathlib import Path


def cut_copy(run_dir: Path, dest: Path, keep: int) -> Path:
    """A copy of a finished run directory as a killed run would have left it after `keep`
    chunks: the later chunks, `idata.nc` and `run.json` removed."""
    shutil.copytree(run_dir, dest)
    for f in sorted((dest / "chunks").glob("*.npz"))[keep:]:
        f.unlink()
    for name in ("idata.nc", "run.json"):
        (dest / name).unlink(missing_ok=True)
    return dest
