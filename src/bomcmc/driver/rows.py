"""A chunk's output buffers, and the per-transition record packed as one row of integers."""

from __future__ import annotations

import jax
import jax.numpy as jnp


class RowLayout:
    """The per-transition record as one row of integers: the log density and every scalar
    info field, each reinterpreted bit for bit (floats bitcast, ints and bools widened), so a
    transition writes one row of a (chunk_size, k) buffer instead of one buffer per field.
    Non-scalar info fields (none in the built-in samplers) keep buffers of their own. "_lp"
    names the log density (no NamedTuple field can start with an underscore)."""

    def __init__(self, lp_struct, info_struct):
        fields = [("_lp", lp_struct)] + list(info_struct._asdict().items())
        self.packed = [(f, s.dtype) for f, s in fields
                       if s.shape == () and jnp.dtype(s.dtype).itemsize <= 8]
        self.width = max(jnp.dtype(d).itemsize for _, d in self.packed)
        self.dtype = jnp.dtype(f"int{8 * self.width}")
        self.columns = {f: c for c, (f, _) in enumerate(self.packed)}
        self.fields = info_struct._fields
        self.info_type = type(info_struct)
        self.shapes = dict(fields)

    @staticmethod
    def _int_of(dtype):
        return jnp.dtype(f"int{8 * jnp.dtype(dtype).itemsize}")

    def pack(self, values: dict) -> jax.Array:
        cols = []
        for f, dt in self.packed:
            v = values[f]
            if jnp.dtype(dt) == jnp.bool_:
                v = v.astype(self.dtype)
            else:
                if not jnp.issubdtype(dt, jnp.signedinteger):  # floats, unsigned: same bits
                    v = jax.lax.bitcast_convert_type(v, self._int_of(dt))
                v = v.astype(self.dtype)  # sign-extends a narrower int: exact
            cols.append(v)
        return jnp.stack(cols, axis=-1)  # (k,) for one transition, (chains, k) for a batch

    def unpack(self, rows: jax.Array, field: str) -> jax.Array:
        dt = jnp.dtype(self.shapes[field].dtype)
        v = rows[..., self.columns[field]]
        if dt == jnp.bool_:
            return v != 0
        v = v.astype(self._int_of(dt))  # back to the field's width: exact
        return v if dt == v.dtype else jax.lax.bitcast_convert_type(v, dt)


class Buffers:
    """A chunk's output buffers: positions, the packed rows (`RowLayout`) and any non-scalar
    info field, `chunk_size` draws each (`empty` is one chain's; `write` takes one chain's or,
    with batched rows, a batch's)."""

    def __init__(self, chunk_size, state, info_struct):
        self.lp_dtype = state.position.dtype  # the log density is stored in the positions' dtype
        self.layout = RowLayout(jax.ShapeDtypeStruct((), self.lp_dtype), info_struct)
        fields = info_struct._asdict()
        self.own = [f for f in fields if f not in self.layout.columns]
        self.empty = (
            jnp.zeros((chunk_size,) + state.position.shape, state.position.dtype),
            jnp.zeros((chunk_size, len(self.layout.packed)), self.layout.dtype),
            {f: jnp.zeros((chunk_size,) + fields[f].shape, fields[f].dtype) for f in self.own},
        )

    def write(self, bufs, i, st, info, mode=None):
        """Row i := the transition's position, log density and info. Batched too: with
        i = (chains, rows) and batched st and info, chain c writes its row rows[c] of the
        (chains, chunk_size, ...) buffers (`mode="drop"`: an out-of-range row writes nothing)."""
        bpos, brow, bown = bufs
        values = dict(info._asdict(), _lp=st.logdensity.astype(self.lp_dtype))
        return (bpos.at[i].set(st.position, mode=mode),
                brow.at[i].set(self.layout.pack(values), mode=mode),
                {f: b.at[i].set(values[f], mode=mode) for f, b in bown.items()})

    def read(self, bufs):
        """(positions, log densities, info) of the filled buffers."""
        bpos, brow, bown = bufs
        layout = self.layout
        info = layout.info_type(*[bown[f] if f in bown else layout.unpack(brow, f)
                                  for f in layout.fields])
        return bpos, layout.unpack(brow, "_lp"), info


def thinned(info, j, thin, n_grad, div):
    """The info a thinned draw keeps: its last transition's, except n_grad (summed over the
    thinning group that transition j ends or continues) and diverging (any)."""
    first = j % thin == 0
    n_grad = jnp.where(first, jnp.zeros_like(n_grad), n_grad) + info.n_grad
    div = jnp.where(first, False, div) | info.diverging
    return info._replace(n_grad=n_grad, diverging=div)
