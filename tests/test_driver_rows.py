"""The chunk's packed per-transition record (driver/rows.py, `RowLayout`) returns every field
bit for bit."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bomcmc.driver.rows import RowLayout


class Info(NamedTuple):
    f32: jax.Array
    f64: jax.Array
    u32: jax.Array
    i8: jax.Array
    flag: jax.Array
    vec: jax.Array  # not scalar: keeps a buffer of its own


def test_row_layout_round_trips_every_scalar_bit_for_bit():
    nan_payload = np.frombuffer(np.uint64(0x7FF8DEADBEEF0001).tobytes(), np.float64)[0]
    values = Info(
        f32=jnp.asarray(np.float32(1.4e-45)),  # a denormal
        f64=jnp.asarray(nan_payload, jnp.float64),
        u32=jnp.asarray(np.uint32(3_000_000_000)),  # above 2**31
        i8=jnp.asarray(np.int8(-7)),
        flag=jnp.asarray(True),
        vec=jnp.arange(3.0),
    )
    lp = jnp.asarray(-1.25, jnp.float64)
    layout = RowLayout(jax.eval_shape(lambda: lp), jax.eval_shape(lambda: values))
    assert "vec" not in layout.columns and "_lp" in layout.columns
    row = layout.pack(dict(zip(values._fields, values), _lp=lp))
    for name in ("f32", "f64", "u32", "i8", "flag"):
        got = np.asarray(layout.unpack(row[None], name))[0]
        want = np.asarray(getattr(values, name))
        assert got.dtype == want.dtype, name
        assert got.tobytes() == want.tobytes(), name
    assert np.asarray(layout.unpack(row[None], "_lp"))[0] == -1.25
