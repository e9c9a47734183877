"""Run directories: atomic files, readable permissions, chunks in order, clear errors."""

import os
import stat

import numpy as np
import pytest

from bomcmc import BomcmcError
from bomcmc.store import (ChunkRecord, DiskStore, MemoryStore, atomic_write, atomic_write_json,
                          atomic_write_text, read_json, to_flat)


def _record(i):
    return ChunkRecord(
        index=i, phase=0, start_iter=3 * i, n_draws=3, thin=1, wall_s=0.5, tuner_s=0.25,
        positions=np.full((2, 3, 1), float(i)), lp=np.full((2, 3), -float(i)),
        tuner_state={"i": i, "gp": {"X": [[0.1, 2.0]]}}, tuner_history=[{"i": i, "r": None}],
        info={"n_grad": np.ones((2, 3), np.int32), "diverging": np.zeros((2, 3), bool)},
        state={"position": np.zeros((2, 1))}, knobs={"step_size": np.full(2, 0.1)},
        next_knobs={"step_size": np.full(2, 0.2)}, adapt={}, tuner_grads=7,
        start_grads=5 if i == 0 else 0)


def _assert_same(a: ChunkRecord, b: ChunkRecord):
    assert a._fields == b._fields
    for f, x, y in zip(a._fields, a, b):
        if isinstance(x, dict) and f not in ("tuner_state",):
            assert list(x) == list(y), f
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
                assert np.asarray(x[k]).dtype == np.asarray(y[k]).dtype, f"{f}.{k}"
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y and type(x) is type(y), f


def test_chunks_round_trip_in_order(tmp_path):
    store = DiskStore(tmp_path / "run")
    store.create({"sampler": "hmc"})
    assert store.last_chunk() is None and store.config() == {"sampler": "hmc"}
    for i in range(3):
        store.write_chunk(i, _record(i))
    store.flush()
    files = DiskStore(tmp_path / "run")  # another store: it has only the files to read
    got = list(files.chunks())
    assert [r.index for r in got] == [0, 1, 2]
    for i, rec in enumerate(got):  # typed fields, as written: scalars, arrays, JSON, groups
        _assert_same(rec, _record(i))
    _assert_same(files.last_chunk(), _record(2))
    assert not store.is_complete()


def test_the_records_a_store_keeps_are_what_its_files_hold(tmp_path):
    """The store that wrote a one-process run's chunks hands back its own records, not the
    files it wrote (no reading back), and those records are what the files hold."""
    store = DiskStore(tmp_path / "run")
    store.create({})
    for i in range(3):
        store.write_chunk(i, _record(i))
    kept, read = list(store.chunks()), list(DiskStore(tmp_path / "run").chunks())
    assert kept[1] is store._written[1]
    for a, b in zip(kept, read, strict=True):
        _assert_same(a, b)
    store.discard_after(1)  # a resumed run rewrites chunk 1 on
    assert [r.index for r in store.chunks()] == [0] and list(store._written) == [0]


def test_a_chunk_that_cannot_be_written_is_an_error(tmp_path):
    """Chunks are written in the background; a write that failed is raised, not lost."""
    store = DiskStore(tmp_path / "run")
    store.create({})
    store.chunk_dir.rmdir()
    store.write_chunk(0, _record(0))
    with pytest.raises(FileNotFoundError):
        store.flush()


def test_chunk_files_of_earlier_versions_still_read(tmp_path):
    """A run directory written before the tuner was timed (no tuner_s), before the tuner's
    and the start's gradients were counted and before the tuner's history was kept per
    chunk: its chunks read with those fields at zero, so an old run resumes."""
    store = DiskStore(tmp_path / "run")
    store.create({})
    flat = to_flat(_record(0))
    for k in ("tuner_s", "tuner_grads", "start_grads", "tuner_history"):
        del flat[k]
    np.savez(store.chunk_dir / "000000.npz", **flat)
    rec = store.last_chunk()
    assert (rec.tuner_s, rec.tuner_grads, rec.start_grads, rec.tuner_history) == (0.0, 0, 0, [])
    assert rec.knobs["step_size"][0] == 0.1 and rec.tuner_state["i"] == 0


def test_a_file_that_is_no_chunk_is_reported(tmp_path):
    store = DiskStore(tmp_path / "run")
    store.create({})
    np.savez(store.chunk_dir / "000000.npz", index=np.asarray(0))
    with pytest.raises(BomcmcError, match="not a chunk .*positions"):
        store.last_chunk()


def test_a_missing_chunk_is_reported(tmp_path):
    store = DiskStore(tmp_path / "run")
    store.create({})
    for i in range(3):
        store.write_chunk(i, _record(i))
    store.flush()
    next(store.chunk_dir.glob("000001.npz")).unlink()
    with pytest.raises(BomcmcError, match="not consecutive"):
        list(store.chunks())


def test_memory_store_keeps_chunks():
    store = MemoryStore()
    assert store.last_chunk() is None and store.path is None
    store.write_chunk(0, _record(0))
    store.write_chunk(1, _record(1))
    assert store.num_chunks() == 2 and store.last_chunk().index == 1


def test_files_follow_the_umask(tmp_path):
    """mkstemp makes owner-only files; a run's files get what the umask allows."""
    old = os.umask(0o022)
    try:
        store = DiskStore(tmp_path / "run")
        store.create({"a": 1})
        store.write_chunk(0, _record(0))
        store.flush()
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
