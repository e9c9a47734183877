"""The Intracluster-Move (IM) sampler and Kawasaki dynamics for constrained spin systems.

Hamze & de Freitas 2010; Mahendran 2011 ch. 4 and Mahendran et al. 2012 (as their code
implements it, `IMUtils.c`): the target is π(s) ∝ exp(−β E(s)) on the states at Hamming
distance n from a reference c (`models/spins.py`). One move with self-avoiding-walk length k
and bias γ:

1. down walk, t = 1..k: among D(s) = {i : s_i ≠ c_i} choose σ_t with probability ∝
   w_γ(i; s) = 1 / (1 + exp(γ ΔE_i(s))), ΔE_i = 2 s_i h^eff_i the energy change of flipping
   i, and flip it;
2. up walk, t = 1..k: among U(s) = {i : s_i = c_i} (now including the spins just flipped
   down) choose ρ_t with probability ∝ w_γ(i; s), and flip it.

The walk keeps d_H(s, c) = n. The probability of the reverse move (ρ_k..ρ_1 down, then
σ_k..σ_1 up) is accumulated during the forward pass: after flipping σ_t, the reverse up step
that restores it has probability w_γ(σ_t; s) / Σ_{j∈U(s)} w_γ(j; s) in the new state, and
after flipping ρ_t the reverse down step w_γ(ρ_t; s) / Σ_{j∈D(s)} w_γ(j; s). The move is
accepted with probability min{1, exp(−β ΔE + log f_rev − log f_fwd)}; a rejected move leaves
the state as it was.

The effective fields h^eff are carried in the state and updated per flip through the
neighbour lists (O(degree) per flip). The weights w_γ live in a sum tree (`sum_tree.py`,
Wong & Easton 1980) with two columns, D(s)'s weights and U(s)'s, built once per proposal
(O(N), vectorised: γ may change between moves). A flip rewrites the rows of the flipped spin
(which changes set) and of its neighbours (whose fields changed), O(degree · log N): less
work than recomputing all N weights on a lattice, more on a dense model such as an RBM,
which therefore takes the O(N) walk (`default_proposal`); choosing
a spin is one descent with the step's uniform variate, which lands on the spin that inverting
the cumulative weights in index order gives (the O(N) scan this replaced: the same draws from
the same keys, but for rounding at an interval's edge); a step's forward and reverse
probabilities are a leaf over the root. k and γ are runtime knobs (the walk's loop runs k
times with k traced), so changing them never recompiles. Kawasaki dynamics is the move with
k = 1 and γ = 0: a random spin of D exchanged with a random spin of U, with its exact
proposal ratio.

The knobs hold a policy: M settings (k_j, γ_j), and every move draws j uniformly (Mahendran
2011 §3.3, the randomised policy). Each setting's move leaves π invariant, so their uniform
mixture does too. M = 1 is the IM sampler with fixed knobs; M > 1 gives the expert's
k ~ U{1..25}, the uniform policy over a box, or the policy that Bayesian optimisation learned
(`tuning/im_tuner.py`).

The kernel is built for one model (duck-typed: `neighbors`, `couplings`, `reference`, `beta`,
`n_flipped`, `effective_fields`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import float_dtype
from ..errors import BomcmcError
from . import sum_tree
from .base import Kernel


class IMState(NamedTuple):
    position: jax.Array  # spins as ±1.0
    logdensity: jax.Array  # −β E(s)
    logdensity_grad: jax.Array  # zeros (the driver's state has one)
    h_eff: jax.Array  # effective fields (N,)


class IMKnobs(NamedTuple):
    k: jax.Array  # (M,) self-avoiding-walk lengths of the policy's settings
    gamma: jax.Array  # (M,) biases of the walk's heat-bath weights


class IMInfo(NamedTuple):
    acceptance_rate: jax.Array
    diverging: jax.Array  # always False
    n_grad: jax.Array  # 0
    n_steps: jax.Array  # spins flipped by the proposal (2k)
    sq_jump: jax.Array
    esjd: jax.Array  # a·||s* − s||²
    step_size: jax.Array  # the move's γ (its k is n_steps / 2)
    spin_energy: jax.Array  # E(s) after the move (= −lp / β; not HMC's "energy")


class Proposal(NamedTuple):
    position: jax.Array
    h_eff: jax.Array  # (N + 1,): the dummy spin's field last
    log_forward: jax.Array
    log_reverse: jax.Array
    delta_energy: jax.Array
    path: jax.Array  # (2·k_max,) flipped spins in order, −1 after 2k


def _leaves(s, h, c, gamma, index):
    """Rows (m, 2) of the walk's sum tree for the spins `index` (the dummy spin N allowed):
    log w_γ = −softplus(γ ΔE_i) in column 0 if i ∈ D(s), in column 1 if i ∈ U(s), −inf in
    the other column (and in both for the dummy)."""
    n = s.shape[0]
    j = jnp.minimum(index, n - 1)
    logw = jnp.where(index < n, -jax.nn.softplus(gamma * 2.0 * s[j] * h[index]), -jnp.inf)
    down = s[j] != c[j]
    return jnp.stack([jnp.where(down, logw, -jnp.inf), jnp.where(down, -jnp.inf, logw)], -1)


DOWN, UP = 0, 1  # the sum tree's columns: the candidates of a down step, of an up step


class _Walk(NamedTuple):
    s: jax.Array
    h: jax.Array  # (N + 1,): the dummy spin's field last
    tree: jax.Array  # the sum tree of the weights at (s, h): columns DOWN and UP
    i: jax.Array  # the spin the next step flips
    log_f: jax.Array
    log_r: jax.Array
    d_e: jax.Array
    path: jax.Array


def propose(model, key, s, h_eff, k, gamma, k_max: int) -> Proposal:
    """One IM proposal from (s, h_eff) with walk length k ≤ k_max (module docstring).

    Under `vmap` (one proposal per chain) the chains walk in lockstep for the batch's
    longest k, a chain past its own k standing still (`_lockstep`); vmap's rule for a loop
    whose length differs between chains would instead select between the old and the new
    carry, the whole tree included, at every flip."""
    dtype = s.dtype
    # NumPy constants, made arrays where they are used: the walk's vmap rule runs in a later
    # trace than this function, and must not capture this trace's values
    ref, nbrs, cpls = (np.asarray(model.reference, dtype), np.asarray(model.neighbors),
                       np.asarray(model.couplings, dtype))

    def choose(w: _Walk, key, t, col, active):
        """The spin of step t among the column's candidates; its log probability joins log f
        where the step is taken."""
        u = jax.random.uniform(jax.random.fold_in(key, t + (0 if col == DOWN else k_max)), (),
                               dtype)
        i = sum_tree.descend(w.tree, u, col)
        log_p = sum_tree.log_leaf(w.tree, i, col) - sum_tree.log_total(w.tree, col)
        return w._replace(i=jnp.where(active, i, w.i),
                          log_f=w.log_f + jnp.where(active, log_p, 0.0))

    def begin(key, s, h_eff, gamma):
        h = jnp.concatenate([h_eff, jnp.zeros((1,), dtype)])
        everyone = jnp.arange(s.shape[0] + 1)  # with the dummy spin, whose weight is 0
        tree = sum_tree.build(_leaves(s, h, jnp.asarray(ref), gamma, everyone))
        zero = jnp.zeros((), dtype)
        w = _Walk(s, h, tree, jnp.zeros((), jnp.int32), zero, zero, zero,
                  jnp.full((2 * k_max,), -1, jnp.int32))
        return choose(w, key, 0, DOWN, True)

    def step(w: _Walk, key, k, gamma, t, col, back):
        """Flip the chosen spin (a no-op past the chain's k), then choose the next: the tree
        is read only after it is rewritten, which lets XLA rewrite it in place."""
        c, nbr, cpl = jnp.asarray(ref), jnp.asarray(nbrs), jnp.asarray(cpls)
        active = t < k
        i, s_i = w.i, w.s[w.i]
        s = w.s.at[i].set(jnp.where(active, -s_i, s_i))
        h = w.h.at[nbr[i]].add(jnp.where(active, -2.0 * s_i, 0.0) * cpl[i])
        h = h.at[-1].set(0.0)  # the dummy spin's field stays 0
        changed = jnp.concatenate([i[None], nbr[i]])  # i changes set and weight; nbrs weight
        tree = sum_tree.update(w.tree, changed, _leaves(s, h, c, gamma, changed), active)
        log_r = sum_tree.log_leaf(tree, i, back) - sum_tree.log_total(tree, back)
        d_e = -2.0 * s[i] * h[i]  # = 2 s_i h_i before the flip: h_i does not depend on s_i
        at = t + (0 if col == DOWN else k)
        w = _Walk(s, h, tree, i, w.log_f, w.log_r + jnp.where(active, log_r, 0.0),
                  w.d_e + jnp.where(active, d_e, 0.0),
                  w.path.at[at].set(jnp.where(active, i, w.path[at])))
        w = choose(w, key, t + 1, col, t + 1 < k)
        return choose(w, key, 0, UP, t + 1 == k) if col == DOWN else w  # the up walk's first

    def lockstep(key, s, h_eff, k, gamma):
        """The proposals of a batch of chains (every argument with a leading chain axis)."""
        w = jax.vmap(begin)(key, s, h_eff, gamma)
        for col, back in ((DOWN, UP), (UP, DOWN)):
            def body(t, w, col=col, back=back):
                return jax.vmap(lambda *a: step(*a, t, col, back))(w, key, k, gamma)
            w = jax.lax.fori_loop(0, jnp.max(k), body, w)
        return Proposal(w.s, w.h, w.log_f, w.log_r, w.d_e, w.path)

    @jax.custom_batching.custom_vmap
    def walk(key, s, h_eff, k, gamma):
        one = lockstep(*(jnp.asarray(x)[None] for x in (key, s, h_eff, k, gamma)))
        return jax.tree_util.tree_map(lambda x: x[0], one)

    @walk.def_vmap
    def _lockstep(axis_size, in_batched, *args):
        args = [x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))
                for x, b in zip(args, in_batched)]
        return lockstep(*args), Proposal(*(True,) * len(Proposal._fields))

    return walk(key, s, h_eff, jnp.asarray(k), jnp.asarray(gamma, dtype))


def _dense_choose(key, logits):
    """An index drawn with probability ∝ exp(logits) by inverting the cumulative weights."""
    w = jnp.exp(logits - jnp.max(logits))  # 0 outside the candidates
    cdf = jnp.cumsum(w)
    u = jax.random.uniform(key, (), w.dtype) * cdf[-1]
    i = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), w.shape[0] - 1)
    return jnp.where(w[i] > 0, i, jnp.argmax(w))  # u·total rounded up to the last plateau


def dense_propose(model, key, s, h_eff, k, gamma, k_max: int) -> Proposal:
    """The IM proposal without the tree: every flip recomputes the weights of all N spins and
    sums them over the candidate sets (O(N) per flip). Same keys, same walk as `propose`
    (tests/test_kernels_intracluster.py checks the paths agree); the reference the tree is
    tested against, and the walk `default_proposal` gives dense models and small ones."""
    dtype = s.dtype
    c = jnp.asarray(model.reference, dtype)
    nbr = jnp.asarray(model.neighbors)
    cpl = jnp.asarray(model.couplings, dtype)
    gamma = jnp.asarray(gamma, dtype)
    h = jnp.concatenate([h_eff, jnp.zeros((1,), dtype)])

    def log_weights(s, h):
        return -jax.nn.softplus(gamma * 2.0 * s * h[:-1])

    def step(t, carry, down: bool):
        s, h, logw, log_f, log_r, d_e, path = carry
        logits = jnp.where((s != c) if down else (s == c), logw, -jnp.inf)
        i = _dense_choose(jax.random.fold_in(key, t + (0 if down else k_max)), logits)
        log_f = log_f + logits[i] - jax.scipy.special.logsumexp(logits)
        s_i = s[i]
        d_e = d_e + 2.0 * s_i * h[i]
        s = s.at[i].set(-s_i)
        h = h.at[nbr[i]].add(-2.0 * s_i * cpl[i])
        h = h.at[-1].set(0.0)
        logw = log_weights(s, h)
        back = (s == c) if down else (s != c)
        log_r = log_r + logw[i] - jax.scipy.special.logsumexp(jnp.where(back, logw, -jnp.inf))
        path = path.at[t + (0 if down else k)].set(i.astype(jnp.int32))
        return s, h, logw, log_f, log_r, d_e, path

    zero = jnp.zeros((), dtype)
    path = jnp.full((2 * k_max,), -1, jnp.int32)
    carry = (s, h, log_weights(s, h), zero, zero, zero, path)
    carry = jax.lax.fori_loop(0, k, lambda t, cr: step(t, cr, True), carry)
    carry = jax.lax.fori_loop(0, k, lambda t, cr: step(t, cr, False), carry)
    s1, h1, _, log_f, log_r, d_e, path = carry
    return Proposal(s1, h1, log_f, log_r, d_e, path)


POLICY_STREAM = 0x1F  # fold_in(key, ·) draws the policy's slot; the walk's keys are unchanged
MAX_POLICY = 100_000


def select(key, knobs: IMKnobs) -> tuple[jax.Array, jax.Array]:
    """(k_j, γ_j) of a slot j ~ U{0..M−1} of the policy."""
    j = jax.random.randint(jax.random.fold_in(key, POLICY_STREAM), (), 0, knobs.k.shape[-1])
    return knobs.k[j], knobs.gamma[j]


def default_proposal(model):
    """The walk with less work per flip for the model: the sum tree rewrites D · log₂ P rows
    (D the neighbour lists' width, P the tree's leaves), the O(N) walk recomputes N weights.
    So a lattice takes the tree and an RBM, whose every spin neighbours the whole other
    layer, the O(N) walk (docs/spins.md, "Which walk": on the 784 × 500 MNIST RBM the tree
    made 0.07-0.16 times the O(N) walk's moves per second)."""
    n, degree = model.neighbors.shape
    return dense_propose if degree * (sum_tree.capacity(n).bit_length() - 1) >= n else propose


def im_kernel(model, name: str = "im", k_max: int | None = None, proposal=None) -> Kernel:
    """The IM `Kernel` for a spin model. Knobs: k (integers 1 ≤ k ≤ k_max, default
    min(n, N − n)) and gamma (≥ 0), each a number or a sequence of the policy's M settings
    (a number is repeated; every move draws one setting uniformly). `proposal` has the
    signature of `propose` (default: `default_proposal(model)`; both walks take the same
    paths from the same keys)."""
    proposal = default_proposal(model) if proposal is None else proposal
    n_spins, n_flipped = int(model.fields.shape[0]), int(model.n_flipped)
    limit = min(n_flipped, n_spins - n_flipped)
    k_max = limit if k_max is None else int(k_max)
    if not 1 <= k_max <= limit:
        raise BomcmcError(f"k_max must be in [1, {limit}] (min(n, N − n)), got {k_max}")
    beta = float(model.beta)

    def init(position, logdensity_fn):
        position = jnp.asarray(position)
        h = model.effective_fields(position)
        return IMState(position, logdensity_fn(position), jnp.zeros_like(position), h)

    def step(key, state, logdensity_fn, knobs):
        k_walk, k_acc = jax.random.split(key)
        s0 = state.position
        dtype = s0.dtype
        k, gamma = select(key, knobs)
        prop = proposal(model, k_walk, s0, state.h_eff, k, gamma, k_max)
        log_alpha = -beta * prop.delta_energy + prop.log_reverse - prop.log_forward
        accept_prob = jnp.exp(jnp.minimum(0.0, log_alpha))
        accept = jax.random.uniform(k_acc, (), dtype) < accept_prob
        s1 = jnp.where(accept, prop.position, s0)
        lp1 = jnp.where(accept, state.logdensity - beta * prop.delta_energy, state.logdensity)
        h1 = jnp.where(accept, prop.h_eff[:-1], state.h_eff)
        jump = jnp.sum((prop.position - s0) ** 2)
        info = IMInfo(acceptance_rate=accept_prob, diverging=jnp.zeros((), bool),
                      n_grad=jnp.zeros((), jnp.int32), n_steps=2 * k,
                      sq_jump=jnp.sum((s1 - s0) ** 2), esjd=accept_prob * jump,
                      step_size=jnp.asarray(gamma, dtype), spin_energy=-lp1 / beta)
        return IMState(s1, lp1, state.logdensity_grad, h1), info

    def make_knobs(d: int, k=1, gamma=0.0) -> IMKnobs:
        if d != n_spins:
            raise BomcmcError(f"sampler '{name}' was built for {n_spins} spins, the posterior "
                              f"has {d}")
        return policy_knobs(k, gamma, k_max)

    return Kernel(name=name, init=init, step=step, make_knobs=make_knobs)


def policy_knobs(k, gamma, k_max: int) -> IMKnobs:
    """IMKnobs of M settings from k and gamma (numbers or sequences, a number repeated to the
    other's length), checked: integers k in [1, k_max], finite γ ≥ 0, 1 ≤ M ≤ MAX_POLICY."""
    k_arr, g_arr = np.atleast_1d(np.asarray(k)), np.atleast_1d(np.asarray(gamma))
    if k_arr.ndim != 1 or g_arr.ndim != 1:
        raise BomcmcError("k and gamma must be numbers or flat sequences")
    size = max(k_arr.size, g_arr.size)
    if not 1 <= size <= MAX_POLICY or {k_arr.size, g_arr.size} - {1, size}:
        raise BomcmcError(f"k and gamma must have one length (or be numbers), between 1 and "
                          f"{MAX_POLICY}: got {k_arr.size} and {g_arr.size}")
    if k_arr.dtype == bool or not np.issubdtype(k_arr.dtype, np.number):
        raise BomcmcError(f"k must be an integer in [1, {k_max}] (or a sequence of them)")
    bad = (np.rint(k_arr) != k_arr) | (k_arr < 1) | (k_arr > k_max)
    if bad.any():
        raise BomcmcError(f"k must be an integer in [1, {k_max}] (or a sequence of them), "
                          f"got {k_arr[bad][0]!r}")
    if g_arr.dtype == bool or not np.issubdtype(g_arr.dtype, np.number):
        raise BomcmcError("gamma must be a finite number >= 0 (or a sequence of them)")
    bad = ~np.isfinite(g_arr) | (g_arr < 0)
    if bad.any():
        raise BomcmcError(f"gamma must be a finite number >= 0 (or a sequence of them), "
                          f"got {g_arr[bad][0]!r}")
    return IMKnobs(k=np.broadcast_to(k_arr.astype(np.int32), (size,)).copy(),
                   gamma=np.broadcast_to(g_arr.astype(float_dtype()), (size,)).copy())


def kawasaki_kernel(model, name: str = "kawasaki", proposal=None) -> Kernel:
    """Kawasaki dynamics: the IM move with k = 1 and γ = 0 (no knobs)."""
    base = im_kernel(model, name=name, k_max=1, proposal=proposal)

    def make_knobs(d: int) -> IMKnobs:
        return base.make_knobs(d, k=1, gamma=0.0)

    return base._replace(make_knobs=make_knobs)
