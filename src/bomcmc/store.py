"""Trace stores: where the driver puts each finished chunk of draws.

`DiskStore` layout of a run directory:

    DIR/config.json          what was asked for (written first; enough to resume)
    DIR/chunks/000000.npz    one finished chunk: draws, info, the chain state and knobs at its end
    DIR/idata.nc             the final ArviZ InferenceData (exists only for a complete run)
    DIR/run.json             run totals (gradients, seconds); also only for a complete run

Every file is written to a temporary name, flushed to disk and renamed into place, so a run
killed at any instant leaves either a whole chunk or no chunk, never half of one, and never an
`idata.nc` that looks complete. `MemoryStore` keeps the same records in a list for runs
without an output directory.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .errors import BomcmcError

CHUNK_RE = re.compile(r"^(\d{6})\.npz$")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write) -> Path:
    """Write `path` whole or not at all: `write(tmp)` fills a temporary file beside it, which
    is fsynced, given the permissions the umask allows (mkstemp's are owner-only) and renamed
    into place."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def read_json(path: Path, what: str) -> dict:
    try:
        with open(path) as f:
            obj = json.load(f)
    except FileNotFoundError:
        raise BomcmcError(f"{path}: missing ({what})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BomcmcError(f"{path}: malformed JSON ({what}): {e}") from None
    if not isinstance(obj, dict):
        raise BomcmcError(f"{path}: expected a JSON object ({what})")
    return obj


class MemoryStore:
    """Chunks kept in memory (no output directory)."""

    def __init__(self) -> None:
        self._chunks: list[dict[str, np.ndarray]] = []
        self.path = None

    def write_chunk(self, index: int, record: dict[str, np.ndarray]) -> None:
        assert index == len(self._chunks)
        self._chunks.append(record)

    def chunks(self) -> Iterator[dict[str, np.ndarray]]:
        yield from self._chunks

    def num_chunks(self) -> int:
        return len(self._chunks)

    def last_chunk(self) -> dict[str, np.ndarray] | None:
        return self._chunks[-1] if self._chunks else None


class DiskStore:
    """Chunks as atomic .npz files under DIR/chunks (see module docstring)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.chunk_dir = self.path / "chunks"

    # -- creating and opening -------------------------------------------------------------
    def check_writable(self, overwrite: bool = False) -> None:
        """Fail early, before any work, if the output cannot be (re)used."""
        if self.path.exists() and not self.path.is_dir():
            raise BomcmcError(f"output path {self.path} exists and is not a directory")
        if self.path.is_dir() and any(self.path.iterdir()) and not overwrite:
            raise BomcmcError(
                f"output directory {self.path} is not empty (use `bomcmc resume` to continue "
                "it, or --overwrite to replace it)"
            )

    def create(self, config: dict, overwrite: bool = False) -> None:
        self.check_writable(overwrite)
        if self.path.is_dir() and any(self.path.iterdir()):
            self.clear()
        try:
            self.chunk_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BomcmcError(f"cannot create output directory {self.path}: {e.strerror}") from None
        atomic_write_json(self.path / "config.json", config)

    def clear(self) -> None:
        for name in ("idata.nc", "run.json", "config.json"):
            p = self.path / name
            if p.exists():
                p.unlink()
        for p in self.path.glob("*.png"):
            p.unlink()
        if self.chunk_dir.exists():
            for p in self.chunk_dir.iterdir():
                p.unlink()

    def config(self) -> dict:
        if not self.path.is_dir():
            raise BomcmcError(f"{self.path}: not a run directory (no such directory)")
        if not (self.path / "config.json").exists():
            raise BomcmcError(f"{self.path}: not a bomcmc run directory (no config.json)")
        return read_json(self.path / "config.json", "run configuration")

    # -- chunks ---------------------------------------------------------------------------
    def _chunk_files(self) -> list[Path]:
        if not self.chunk_dir.is_dir():
            return []
        files = sorted(p for p in self.chunk_dir.iterdir() if CHUNK_RE.match(p.name))
        for i, p in enumerate(files):
            if int(CHUNK_RE.match(p.name).group(1)) != i:
                raise BomcmcError(f"{self.chunk_dir}: chunk files are not consecutive at {p.name}")
        return files

    def num_chunks(self) -> int:
        return len(self._chunk_files())

    def write_chunk(self, index: int, record: dict[str, np.ndarray]) -> None:
        buf = io.BytesIO()
        np.savez(buf, **record)
        atomic_write_bytes(self.chunk_dir / f"{index:06d}.npz", buf.getvalue())

    def _load(self, path: Path) -> dict[str, np.ndarray]:
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except Exception as e:  # noqa: BLE001 - any unreadable chunk is a bad file
            raise BomcmcError(f"{path}: unreadable chunk ({type(e).__name__})") from None

    def chunks(self) -> Iterator[dict[str, np.ndarray]]:
        for p in self._chunk_files():
            yield self._load(p)

    def last_chunk(self) -> dict[str, np.ndarray] | None:
        files = self._chunk_files()
        return self._load(files[-1]) if files else None

    # -- the finished run -----------------------------------------------------------------
    def write_idata(self, idata) -> Path:
        return atomic_write(self.path / "idata.nc",
                            lambda tmp: idata.to_netcdf(tmp, engine="h5netcdf"))

    def write_run(self, totals: dict) -> None:
        atomic_write_json(self.path / "run.json", totals)

    def is_complete(self) -> bool:
        return (self.path / "idata.nc").exists() and (self.path / "run.json").exists()
