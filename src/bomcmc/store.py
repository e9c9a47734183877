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

A `DiskStore` writes its chunk files in one background thread, in order, so that the next
chunk runs while the last one is serialised and fsynced; whatever reads the files waits for
the writes first (`flush`). It also keeps the records of a one-process run's chunks it wrote
itself, so that assembling the run does not read back files it has just written.

A chunk travels as a `ChunkRecord` between the host loop that makes it, the store and the
assembly that reads it back; only the store converts it to and from the flat keys of a chunk
file (`index`, ..., `info.FIELD`, `state.FIELD`, `knobs.FIELD`, `next_knobs.FIELD`,
`adapt.FIELD`; the tuner's state and history as JSON text).
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import numpy as np

from .errors import BomcmcError

# a one-process run's chunk: 000012.npz; process p of n's part of it: 000012.p1of2.npz
CHUNK_RE = re.compile(r"^(\d{6})(?:\.p(\d+)of(\d+))?\.npz$")


class ChunkRecord(NamedTuple):
    """One finished chunk: what the host loop hands the store and assembly reads back.

    Attributes:
        index: the chunk's number in the run (0, 1, ...).
        phase: `tuning.base.WARMUP` or `SAMPLING`.
        start_iter: the run's transition index at the chunk's start.
        n_draws: draws kept (each the last of `thin` transitions).
        thin: transitions per kept draw.
        wall_s: seconds of the chunk, the tuner's host work included.
        tuner_s: seconds of that host work alone.
        positions: (chains, n_draws, dim) draws on the flat vector.
        lp: (chains, n_draws) their log densities.
        tuner_state: the tuner's `state_dict(history=False)` after the chunk (JSON-able).
        tuner_history: the tuner's history entries of this chunk.
        info: the kernel's info fields, each (chains, n_draws, ...).
        state: the chains' kernel state at the chunk's end, one array per field.
        knobs: the knobs the chunk ran with.
        next_knobs: the knobs the tuner chose for the next chunk.
        adapt: the warm-up adapter's state at the chunk's end ({} without an adapter).
        tuner_grads: gradients the tuner spent itself (warm-up work, whatever the phase).
        start_grads: gradients of the kernel's start (chunk 0 only; else 0).
    """

    index: int
    phase: int
    start_iter: int
    n_draws: int
    thin: int
    wall_s: float
    tuner_s: float
    positions: np.ndarray
    lp: np.ndarray
    tuner_state: dict
    tuner_history: list
    info: dict[str, np.ndarray]
    state: dict[str, np.ndarray]
    knobs: dict[str, np.ndarray]
    next_knobs: dict[str, np.ndarray]
    adapt: dict[str, np.ndarray]
    tuner_grads: int = 0
    start_grads: int = 0


_SCALARS = {"index": int, "phase": int, "start_iter": int, "n_draws": int, "thin": int,
            "wall_s": float, "tuner_s": float, "tuner_grads": int, "start_grads": int}
_GROUPS = ("info", "state", "knobs", "next_knobs", "adapt")
# keys that chunk files written by earlier versions may lack, and their values then
_OPTIONAL = {"tuner_s": 0.0, "tuner_grads": 0, "start_grads": 0, "tuner_history": "[]"}


def to_flat(record: ChunkRecord) -> dict[str, np.ndarray]:
    """The record as the flat arrays of a chunk file."""
    fields = record._asdict()
    flat = {k: np.asarray(fields[k]) for k in _SCALARS}
    flat["positions"], flat["lp"] = np.asarray(record.positions), np.asarray(record.lp)
    flat["tuner_state"] = np.asarray(json.dumps(record.tuner_state))
    flat["tuner_history"] = np.asarray(json.dumps(record.tuner_history))
    for group in _GROUPS:
        for f, v in fields[group].items():
            flat[f"{group}.{f}"] = np.asarray(v)
    return flat


def from_flat(flat: dict[str, np.ndarray], where: str) -> ChunkRecord:
    """The record of a chunk file's arrays (files of earlier versions too: `_OPTIONAL`)."""
    flat = {**_OPTIONAL, **flat}
    missing = [k for k in ChunkRecord._fields if k not in flat and k not in _GROUPS]
    if missing:
        raise BomcmcError(f"{where}: not a chunk (lacks {', '.join(missing)})")
    groups = {g: {k[len(g) + 1:]: v for k, v in flat.items() if k.startswith(g + ".")}
              for g in _GROUPS}
    return ChunkRecord(
        **{k: cast(flat[k]) for k, cast in _SCALARS.items()},
        positions=flat["positions"], lp=flat["lp"],
        tuner_state=json.loads(str(flat["tuner_state"])),
        tuner_history=json.loads(str(flat["tuner_history"])),
        **groups,
    )


def merge_parts(parts: list[ChunkRecord]) -> ChunkRecord:
    """One chunk from the parts the processes of a run wrote, in process order: their chains
    side by side. The tuner's state and history are every process's (the tuners saw every
    chain); the seconds are the slowest process's; the kernel's start gradients add up."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]

    def cat(group):
        return {f: np.concatenate([getattr(p, group)[f] for p in parts]) for f in
                getattr(first, group)}

    return first._replace(
        wall_s=max(p.wall_s for p in parts), tuner_s=max(p.tuner_s for p in parts),
        positions=np.concatenate([p.positions for p in parts]),
        lp=np.concatenate([p.lp for p in parts]),
        info=cat("info"), state=cat("state"), knobs=cat("knobs"),
        next_knobs=cat("next_knobs"), adapt=cat("adapt"),
        start_grads=sum(p.start_grads for p in parts))


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

    shared = False  # each process holds its own

    def __init__(self) -> None:
        self._chunks: list[ChunkRecord] = []
        self.path = None

    def write_chunk(self, index: int, record: ChunkRecord, part: tuple[int, int] = (0, 1)) -> None:
        if part != (0, 1):
            raise BomcmcError("a run over several processes needs an output directory "
                              "(out=DIR): each process writes its chains' chunks there")
        assert index == len(self._chunks)
        self._chunks.append(record)

    def chunks(self) -> Iterator[ChunkRecord]:
        yield from self._chunks

    def num_chunks(self) -> int:
        return len(self._chunks)

    def last_chunk(self) -> ChunkRecord | None:
        return self._chunks[-1] if self._chunks else None

    def flush(self) -> None:
        """Nothing to wait for (the interface of `DiskStore.flush`)."""


class DiskStore:
    """Chunks as atomic .npz files under DIR/chunks (see module docstring)."""

    shared = True  # one directory every process of a run reads

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.chunk_dir = self.path / "chunks"
        self._writer: ThreadPoolExecutor | None = None
        self._pending: list[Future] = []
        # one-process chunks this store wrote, by index: what a file read back would hold
        self._written: dict[int, ChunkRecord] = {}

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
        self.flush()
        self._written.clear()
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
    def _chunk_parts(self) -> list[list[Path]]:
        """The files of each complete chunk, in order, each chunk's parts in process order.
        A chunk is complete when every process's part is there; the run's chunks are those
        before the first incomplete one (a run killed between two processes' writes)."""
        self.flush()
        if not self.chunk_dir.is_dir():
            return []
        found: dict[int, dict[int, dict[int, Path]]] = {}
        for p in self.chunk_dir.iterdir():
            m = CHUNK_RE.match(p.name)
            if m:
                size = int(m.group(3) or 1)
                found.setdefault(int(m.group(1)), {}).setdefault(size, {})[
                    int(m.group(2) or 0)] = p
        out = []
        for index in range(len(found) + 1):
            complete = [sorted(parts.items()) for size, parts in found.get(index, {}).items()
                        if sorted(parts) == list(range(size))]
            if not complete:
                if any(i > index for i in found):
                    if not found.get(index):
                        raise BomcmcError(f"{self.chunk_dir}: chunk files are not consecutive "
                                          f"(no chunk {index:06d})")
                break
            out.append([p for _, p in complete[0]])
        return out

    def _chunk_files(self) -> list[Path]:
        return [p for parts in self._chunk_parts() for p in parts]

    def num_chunks(self) -> int:
        return len(self._chunk_parts())

    def write_chunk(self, index: int, record: ChunkRecord, part: tuple[int, int] = (0, 1)) -> None:
        """Chunk `index`, or process part[0]'s part of it in a run of part[1] processes: queued
        for the writer thread (`flush` waits for it); a write that failed before is raised
        here, at the next chunk."""
        rank, size = part
        name = f"{index:06d}.npz" if size == 1 else f"{index:06d}.p{rank}of{size}.npz"
        self._raise_failed()
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bomcmc-store")
        self._pending.append(self._writer.submit(self._write, self.chunk_dir / name, record))
        if size == 1:
            self._written[index] = record

    @staticmethod
    def _write(path: Path, record: ChunkRecord) -> None:
        buf = io.BytesIO()
        np.savez(buf, **to_flat(record))
        atomic_write_bytes(path, buf.getvalue())

    def _raise_failed(self) -> None:
        done = [f for f in self._pending if f.done()]
        self._pending = [f for f in self._pending if not f.done()]
        for f in done:
            f.result()  # raises the write's error

    def flush(self) -> None:
        """Wait until every queued chunk is on disk; raise the first write that failed."""
        pending, self._pending = self._pending, []
        for f in pending:
            f.result()

    def discard_after(self, index: int) -> None:
        """Remove every chunk file numbered `index` or later: parts of a chunk that not every
        process finished, before a resumed run writes that chunk again."""
        self.flush()
        self._written = {i: r for i, r in self._written.items() if i < index}
        if not self.chunk_dir.is_dir():
            return
        for p in self.chunk_dir.iterdir():
            m = CHUNK_RE.match(p.name)
            if m and int(m.group(1)) >= index:
                p.unlink()

    def _load(self, path: Path) -> ChunkRecord:
        try:
            with np.load(path, allow_pickle=False) as z:
                flat = {k: z[k] for k in z.files}
        except Exception as e:  # noqa: BLE001 - any unreadable chunk is a bad file
            raise BomcmcError(f"{path}: unreadable chunk ({type(e).__name__})") from None
        return from_flat(flat, str(path))

    def _record(self, index: int, parts: list[Path]) -> ChunkRecord:
        """Chunk `index` from its files, or the record itself where this store wrote it."""
        if len(parts) == 1 and index in self._written \
                and parts[0].name == f"{index:06d}.npz":
            return self._written[index]
        return merge_parts([self._load(p) for p in parts])

    def chunks(self) -> Iterator[ChunkRecord]:
        for index, parts in enumerate(self._chunk_parts()):
            yield self._record(index, parts)

    def last_chunk(self) -> ChunkRecord | None:
        parts = self._chunk_parts()
        return self._record(len(parts) - 1, parts[-1]) if parts else None

    # -- the finished run -----------------------------------------------------------------
    def write_idata(self, idata) -> Path:
        return atomic_write(self.path / "idata.nc",
                            lambda tmp: idata.to_netcdf(tmp, engine="h5netcdf"))

    def write_run(self, totals: dict) -> None:
        atomic_write_json(self.path / "run.json", totals)

    def is_complete(self) -> bool:
        return (self.path / "idata.nc").exists() and (self.path / "run.json").exists()
