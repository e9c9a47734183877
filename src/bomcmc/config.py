"""Process-wide switches and caches: float64, JAX's persistent compilation cache, and the
bounded caches of objects a process builds once (`Latest`)."""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Hashable

import jax

from .errors import BomcmcError


class Latest:
    """The latest `size` values built by key, the least recently used dropped first. A key
    may hold objects' ids: `keep` holds those objects alive with the value, so that no other
    object takes their ids while the entry lives. Used for the compiled chunk programs
    (`driver.engine.PROGRAMS`), the samplers built for a posterior (`registry`) and the
    built-in posteriors (`models.get`), so that runs of one posterior share one program."""

    def __init__(self, size: int = 8):
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        _CACHES.add(self)

    def get(self, key: Hashable | None) -> Any:
        """The value of `key`, or None (always None for the key None)."""
        if key is None or key not in self._entries:
            return None
        self._entries.move_to_end(key)
        return self._entries[key][0]

    def put(self, key: Hashable | None, value: Any, keep: tuple = ()) -> Any:
        """Store `value` under `key` (nothing for the key None); returns `value`."""
        if key is not None:
            self._entries[key] = (value, keep)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def get_or_build(self, key: Hashable, build: Callable[[], Any], keep: tuple = ()) -> Any:
        value = self.get(key)
        return value if value is not None else self.put(key, build(), keep)

    def keys(self) -> list:
        return list(self._entries)

    def clear(self) -> None:
        self._entries.clear()


_CACHES: "weakref.WeakSet[Latest]" = weakref.WeakSet()


def clear_caches() -> None:
    """Empty every `Latest` cache of the process: the next run builds, traces and compiles
    afresh (a test that patches a function a program calls needs this)."""
    for cache in list(_CACHES):
        cache.clear()


def set_float64(enable: bool = True) -> None:
    """Switch JAX to 64-bit floats (call before creating arrays; `sample(float64=True)` does)."""
    jax.config.update("jax_enable_x64", bool(enable))


def float64_enabled() -> bool:
    return bool(jax.config.read("jax_enable_x64"))


def float_dtype():
    """The floating dtype arrays are made in: float64 when enabled, else float32."""
    return jax.numpy.float64 if float64_enabled() else jax.numpy.float32


def cache_dir() -> Path:
    base = os.environ.get("BOMCMC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "bomcmc"
    )
    return Path(base)


CACHE_MAX_BYTES = 4 << 30  # the cache's size, beyond which JAX evicts its oldest entries


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Turn on JAX's persistent compilation cache so a second run of the same program (a
    posterior or network of the same shapes: the data are its inputs, not constants) loads
    compiled code instead of compiling it again. The directory is `path`, else
    $BOMCMC_CACHE_DIR/jax, else the user cache directory (~/.cache/bomcmc/jax); a size cap
    ($BOMCMC_CACHE_MAX_BYTES, else 4 GiB; `_cache_cap`) makes JAX evict old entries and take
    a file lock around every read and write, so several processes can share it. Returns the
    directory, or None if disabled with BOMCMC_NO_CACHE=1 or the directory cannot be made."""
    if os.environ.get("BOMCMC_NO_CACHE"):
        return None
    d = Path(path) if path is not None else cache_dir() / "jax"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(d))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    cap = _cache_cap()
    jax.config.update("jax_compilation_cache_max_size", cap)
    if cap != -1:
        _date_undated_entries(d)
    _reset_cache()  # JAX reads the settings at its first compilation: read them again
    return d


def _cache_cap() -> int:
    """The cache's size cap in bytes: $BOMCMC_CACHE_MAX_BYTES, else CACHE_MAX_BYTES. -1: no
    cap. With a cap JAX locks the directory and reads every entry's access time on every
    write (its LRU eviction), a cost that grows with the entries; with none it does neither,
    and nothing is evicted."""
    text = os.environ.get("BOMCMC_CACHE_MAX_BYTES")
    if text is None:
        return CACHE_MAX_BYTES
    try:
        cap = int(text)
    except ValueError:
        cap = 0
    if cap < -1 or cap == 0:
        raise BomcmcError(f"BOMCMC_CACHE_MAX_BYTES must be a positive number of bytes or -1 "
                          f"(no cap), got '{text}'")
    return cap


def _date_undated_entries(d: Path) -> None:
    """Give every cached program without one the access-time file JAX's size-capped cache
    keeps beside it. Programs cached with no cap (by bomcmc before it set one, or by another
    program sharing the directory) have none, and then JAX's eviction fails on every write:
    nothing new is ever cached ("Error writing persistent compilation cache entry ...
    FileNotFoundError: ...-atime"). The time given is the entry's modification time, in JAX's
    format (nanoseconds, 8 bytes little-endian), under JAX's own lock on the directory."""
    try:
        import filelock

        with filelock.FileLock(d / ".lockfile", timeout=10):
            names = {e.name for e in os.scandir(d)}  # one listing, not a stat per entry
            for name in names:
                if name.endswith("-cache") and name[: -len("-cache")] + "-atime" not in names:
                    entry = d / name
                    atime = d / (name[: -len("-cache")] + "-atime")
                    atime.write_bytes(entry.stat().st_mtime_ns.to_bytes(8, "little"))
    except Exception:  # noqa: BLE001 - a cache that cannot be repaired still works for reads
        pass


def default_compilation_cache() -> Path | None:
    """The cache `sample` and `resume` use: bomcmc's (`enable_compilation_cache`) unless
    the program chose its own directory for JAX's cache, or BOMCMC_NO_CACHE=1."""
    own = jax.config.jax_compilation_cache_dir
    if own:
        return Path(own)
    return enable_compilation_cache()


def _reset_cache() -> None:
    try:
        from jax.experimental.compilation_cache import compilation_cache as cc

        cc.reset_cache()
    except Exception:  # noqa: BLE001 - best effort across JAX versions
        pass
