"""Run directories: atomic files, readable permissions, chunks in order, clear errors."""

import os
import stat

import numpy as np
import pytest

from bomcmc import BomcmcError
from bomcmc.store import (DiskStore, MemoryStore, atomic_write, atomic_write_json,
                          atomic_write_text, read_json)


def _record(i):
    return {"index": np.asarray(i), "positions": np.full((2, 3, 1), float(i))}


def test_chunks_round_trip_in_order(tmp_path):
    store = DiskStore(tmp_path / "run")
    store.create({"sampler": "hmc"})
    assert store.last_chunk() is None and store.config() == {"sampler": "hmc"}
    for i in range(3):
        store.write_chunk(i, _record(i))
    got = list(store.chunks())
    assert [int(r["index"]) for r in got] == [0, 1, 2]
    np.testing.assert_array_equal(store.last_chunk()["positions"], _record(2)["positions"])
    assert not store.is_complete()


def test_a_missing_chunk_is_reported(tmp_path):
    store = DiskStore(tmp_path / "run")
    store.create({})
    for i in range(3):
        store.write_chunk(i, _record(i))
    next(store.chunk_dir.glob("000001.npz")).unlink()
    with pytest.raises(BomcmcError, match="not consecutive"):
        list(store.chunks())


def test_memory_store_keeps_chunks():
    store = MemoryStore()
    assert store.last_chunk() is None and store.path is None
    store.write_chunk(0, _record(0))
    store.write_chunk(1, _record(1))
    assert store.num_chunks() == 2 and int(store.last_chunk()["index"]) == 1


def test_files_follow_the_umask(tmp_path):
    """mkstemp makes owner-only files; a run's files get what the umask allows."""
    old = os.umask(0o022)
    try:
        store = DiskStore(tmp_path / "run")
        store.create({"a": 1})
        store.write_chunk(0, _record(0))
        atomic_write_text(tmp_path / "t.txt", "x")
        for p in (store.path / "config.json", store.chunk_dir / "000000.npz",
                  tmp_path / "t.txt"):
            mode = stat.S_IMODE(p.stat().st_mode)
            assert mode == 0o644, f"{p.name}: {oct(mode)}"
        os.umask(0o077)
        atomic_write_text(tmp_path / "private.txt", "x")
        assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def broken(tmp):
        with open(tmp, "wb") as f:
            f.write(b"half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]  # no temporary file left


def test_read_json_errors_are_one_line(tmp_path):
    with pytest.raises(BomcmcError, match="missing"):
        read_json(tmp_path / "nope.json", "thing")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(BomcmcError, match="malformed JSON"):
        read_json(tmp_path / "bad.json", "thing")
    atomic_write_json(tmp_path / "list.json", [1, 2])
    with pytest.raises(BomcmcError, match="expected a JSON object"):
        read_json(tmp_path / "list.json", "thing")


def test_a_non_empty_directory_needs_overwrite(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "something").write_text("x")
    with pytest.raises(BomcmcError, match="not empty"):
        DiskStore(d).check_writable()
    DiskStore(d).check_writable(overwrite=True)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(BomcmcError, match="not a directory"):
        DiskStore(f).check_writable()


def test_overwrite_clears_the_old_run(tmp_path):
    store = DiskStore(tmp_path / "run")
    store.create({"n": 1})
    store.write_chunk(0, _record(0))
    store.write_run({"done": True})
    (store.path / "idata.nc").write_bytes(b"x")
    assert store.is_complete()
    store.create({"n": 2}, overwrite=True)
    assert store.config() == {"n": 2} and store.last_chunk() is None
    assert not store.is_complete()


def test_config_of_a_missing_or_foreign_directory(tmp_path):
    with pytest.raises(BomcmcError, match="no such directory"):
        DiskStore(tmp_path / "nope").config()
    (tmp_path / "empty").mkdir()
    with pytest.raises(BomcmcError, match="no config.json"):
        DiskStore(tmp_path / "empty").config()


def test_a_real_runs_files_are_readable_by_colleagues(tmp_path):
    """Every file a run writes (config, chunks, run totals, idata.nc) is group- and
    other-readable under umask 022, as files made with open() would be."""
    import bomcmc

    old = os.umask(0o022)
    try:
        bomcmc.sample(posterior="gauss-iid-2", sampler="hmc", chains=2, draws=5, warmup=5,
                      step_size=0.3, steps=2, progress=False, out=tmp_path / "run")
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert {"config.json", "run.json", "idata.nc"} <= {p.name for p in files}
    assert any(p.suffix == ".npz" for p in files)
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) & 0o044 == 0o044, p.name
