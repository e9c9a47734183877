"""Priors for Bayesian neural networks: Neal's hierarchical Gamma priors in FBM notation.

Sources: Neal 1996 as implemented in FBM (`util/prior.doc`, `util/prior.c`, `net/net-mc.c`,
`net/net-models.tex`); Choo 2000 §3.2, eqs. 3.5, 3.7, 3.11–3.12; Ask 2022, eq. 6.22 (fixed
Gaussian priors λ_W, λ_b).

**One prior, FBM's syntax** `[x]Width[:[α_group][:[α_sub-group][:[α_parameter]]]]`:

- Precisions (inverse variances) are Gamma with *mean* μ and *shape* α in Neal's
  parametrisation: density ∝ τ^{α/2 − 1} exp(−τ α / (2μ)), i.e. Gamma(shape α/2, rate α/(2μ)),
  mean μ, variance 2μ²/α (Choo 2000, eq. 3.7). An omitted α is ∞: τ equals its mean.
- The top-level mean is ω = 1/Width². With the "x" prefix it is scaled by the number N of
  source units: ω = N/W² (α = ∞), N·α/((α − 2)W²) (α > 2), N log N/W² (α = 2; N for N < 3, as
  in FBM's `prior_width_scaled`, where N log N would be 0 or smaller than N), N^{2/α}/W²
  (α < 2); α is α_parameter if finite, else α_sub-group.
- A Width of "+" is 1e10 (no penalty), as in FBM.

For a group of weights W (source units i, destination units j) the three levels are
τ₀ ~ Gamma(mean ω, α_group), τ₁ᵢ ~ Gamma(mean τ₀, α_sub) (one per source unit: ARD for
input→hidden weights), τ₂ᵢⱼ ~ Gamma(mean τ₁ᵢ, α_param), Wᵢⱼ ~ N(0, 1/τ₂ᵢⱼ). The last level is
integrated out: a finite α_param makes the weights Student-t with α_param degrees of freedom
and scale τ₁ᵢ^{-1/2}. Biases have no sub-groups: their second α is the per-bias level
(t-distributed biases). For the noise of a regression the levels are one common precision,
one per output, and one per case (t-distributed noise).

**Gibbs conditionals** (FBM `net-mc.c` and `net-models.tex`), for a precision τ with prior
Gamma(mean μ, shape α) controlling n Gaussian quantities zᵢ:

    τ | z ~ Gamma(shape (α + n)/2, rate (α/μ + Σ zᵢ²)/2)                    (`gamma_conditional`)

and for an upper precision τ with prior Gamma(mean ω, shape α₀) given n lower precisions τᵢ of
shape α₁ and mean τ, x = log τ has density ∝ exp(a·x − b·eˣ − c·e⁻ˣ) with
a = (α₀ − nα₁)/2, b = α₀/(2ω), c = α₁ Σ τᵢ / 2 (FBM `cond_sigma`), a log-concave density drawn
exactly by `sample_log_upper` (rejection from a three-piece exponential envelope).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Mapping

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from ..errors import BomcmcError

INF = math.inf
PLUS_WIDTH = 1e10  # FBM: a width of "+" means 1e10 (infinity for most purposes)

_NUM = r"[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
_PRIOR_RE = re.compile(rf"^(x?)(\+|{_NUM})((?::(?:{_NUM})?){{0,3}})$")


def _fmt(v: float) -> str:
    """Shortest text that parses back to exactly v (integers without a decimal point)."""
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


@dataclasses.dataclass(frozen=True)
class Prior:
    """One FBM prior specification, e.g. `Prior.parse("x0.1:1:4")`.

    width: the Width (a standard deviation); `alphas`: (α_group, α_sub-group, α_parameter),
    `math.inf` where omitted; `scaled`: the "x" prefix (width scaling with the number of
    source units)."""

    width: float
    alphas: tuple[float, float, float] = (INF, INF, INF)
    scaled: bool = False
    plus: bool = False  # the width was written "+"

    def __post_init__(self):
        if not (self.width > 0 and math.isfinite(self.width)):
            raise BomcmcError(f"prior width must be positive and finite, got {self.width}")
        a = tuple(float(x) for x in self.alphas) + (INF,) * (3 - len(self.alphas))
        if len(a) != 3 or any(not x > 0 for x in a):
            raise BomcmcError(f"prior alphas must be positive (or inf), got {self.alphas}")
        object.__setattr__(self, "alphas", a)

    @classmethod
    def parse(cls, text: str | float | "Prior") -> "Prior":
        """Parse `[x]Width[:[α_group][:[α_sub][:[α_param]]]]` (FBM `prior_parse`)."""
        if isinstance(text, Prior):
            return text
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            return cls(float(text))
        s = str(text).strip()
        if s.endswith("!"):
            raise BomcmcError(f"prior '{s}': FBM's one/two-point '!' priors are not supported")
        m = _PRIOR_RE.match(s)
        if m is None:
            raise BomcmcError(
                f"cannot parse prior '{s}': expected FBM's "
                "[x]Width[:alpha_group[:alpha_sub[:alpha_param]]], e.g. 'x0.05:0.5' or '0.05:1:2'")
        scaled, width, rest = m.group(1) == "x", m.group(2), m.group(3)
        plus = width == "+"
        parts = rest.split(":")[1:] if rest else []
        alphas = [float(p) if p else INF for p in parts]
        if any(not a > 0 for a in alphas):
            raise BomcmcError(f"prior '{s}': every alpha must be positive")
        return cls(PLUS_WIDTH if plus else float(width), tuple(alphas), scaled, plus)

    def __str__(self) -> str:
        alphas = list(self.alphas)
        while alphas and alphas[-1] == INF:
            alphas.pop()
        tail = "".join(":" + ("" if a == INF else _fmt(a)) for a in alphas)
        return ("x" if self.scaled else "") + ("+" if self.plus else _fmt(self.width)) + tail

    @property
    def alpha_group(self) -> float:
        return self.alphas[0]

    @property
    def alpha_sub(self) -> float:
        return self.alphas[1]

    @property
    def alpha_param(self) -> float:
        return self.alphas[2]

    def mean_precision(self, n_source: int | None = None) -> float:
        """ω, the top-level mean precision: 1/W², or with "x" the scaled value (FBM
        `prior.doc`)."""
        base = 1.0 / self.width**2
        if not self.scaled:
            return base
        if n_source is None or n_source < 1:
            raise BomcmcError(f"prior '{self}': 'x' scaling needs the number of source units")
        n = float(n_source)
        alpha = self.alpha_param if self.alpha_param < INF else self.alpha_sub
        if alpha == INF:
            scale = n
        elif alpha > 2:
            scale = n * alpha / (alpha - 2)
        elif alpha == 2:
            scale = n if n < 3 else n * math.log(n)
        else:
            scale = n ** (2.0 / alpha)
        return scale * base


# ---------------------------------------------------------------------------------------
# Whole-network specifications: "ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"
# ---------------------------------------------------------------------------------------
_GROUP_RE = re.compile(r"^(ih|bh|hh|ho|io|bo)(\d*)$")
_UNSUPPORTED = {"ti": "input offsets", "th": "hidden offsets", "ah": "adjustments",
                "ao": "adjustments"}


def canonical_group(name: str) -> str:
    """FBM group name -> ours: ih = ih0, bh = bh0, hh = hh1; ho stays ho (from the last hidden
    layer) and an explicit ho# is kept for the network to check against its depth."""
    m = _GROUP_RE.match(name)
    if m is None:
        base = re.sub(r"\d+$", "", name)
        if base in _UNSUPPORTED:
            raise BomcmcError(f"prior group '{name}' ({_UNSUPPORTED[base]}) is not supported")
        raise BomcmcError(
            f"unknown prior group '{name}' (use ih#, bh#, hh#, ho, io, bo as in FBM's net-spec)")
    kind, idx = m.group(1), m.group(2)
    if kind in ("io", "bo"):
        if idx:
            raise BomcmcError(f"prior group '{name}': '{kind}' takes no layer number")
        return kind
    if kind == "ho":
        return "ho" + (str(int(idx)) if idx else "")
    idx = str(int(idx)) if idx else ("1" if kind == "hh" else "0")
    if kind == "hh" and int(idx) < 1:
        raise BomcmcError("prior group 'hh0' does not exist: hh# connects hidden layer #-1 to #")
    return kind + idx


def _short(name: str) -> str:
    return {"ih0": "ih", "bh0": "bh", "hh1": "hh"}.get(name, name)


def _group_order(name: str) -> tuple:
    m = re.match(r"^([a-z]+)(\d*)$", name)
    kind, idx = m.group(1), int(m.group(2) or 0)
    if kind in ("ih", "hh", "bh"):
        return (0, idx, {"hh": 0, "ih": 1, "bh": 2}[kind])
    return (1, {"ho": 0, "io": 1, "bo": 2}[kind], idx)


@dataclasses.dataclass(frozen=True)
class NetPrior:
    """The priors of a network, by group, plus the noise prior of a regression.

    Groups (FBM's names): `ih0` input→hidden-0 weights, `hh#` hidden #−1 → hidden #, `bh#`
    hidden-layer biases, `ho` last hidden → output weights (`ho#` with # the last layer is
    the same group), `io` input → output weights, `bo` output biases. A group that is absent
    has no parameters (FBM's "-"). Unnumbered names are FBM's defaults: ih = ih0, bh = bh0,
    hh = hh1."""

    groups: Mapping[str, Prior]
    noise: Prior | None = None

    @classmethod
    def parse(cls, spec: "str | Mapping[str, str | Prior] | NetPrior",
              noise: "str | Prior | None" = None) -> "NetPrior":
        """From FBM net-spec text ("ih 0.05:0.5 bh=0.05:0.5 ho x0.05:0.5 bo 100"; pairs may be
        written `group prior` or `group=prior`, "-" for an absent group) or a dict."""
        if isinstance(spec, NetPrior):
            if noise is None:
                return spec
            return NetPrior(dict(spec.groups), Prior.parse(noise))
        if isinstance(spec, str):
            tokens = spec.replace("=", " ").split()
            if len(tokens) % 2:
                raise BomcmcError(
                    f"cannot parse network prior '{spec}': expected pairs 'group prior'")
            pairs = list(zip(tokens[::2], tokens[1::2]))
        elif isinstance(spec, Mapping):
            pairs = list(spec.items())
        else:
            raise BomcmcError("network prior must be FBM text, a dict or a NetPrior")
        groups: dict[str, Prior] = {}
        for name, text in pairs:
            key = canonical_group(str(name))
            if key in groups:
                raise BomcmcError(f"prior group '{name}' is given twice")
            if isinstance(text, str) and text.strip() == "-":
                continue
            groups[key] = Prior.parse(text)
        ordered = dict(sorted(groups.items(), key=lambda kv: _group_order(kv[0])))
        return cls(ordered, None if noise is None else Prior.parse(noise))

    def __str__(self) -> str:
        return " ".join(f"{_short(k)} {v}" for k, v in self.groups.items())


def fixed_gaussian(hidden_layers: int, lambda_w: float = 1.0, lambda_b: float = 1.0,
                   noise_precision: float | None = None, io: bool = False) -> NetPrior:
    """Ask 2022, eq. 6.22: every kernel N(0, 1/λ_W), every bias N(0, 1/λ_b), fixed; with
    `noise_precision` λ the Gaussian likelihood of eq. 6.16 has that fixed precision."""
    if not (lambda_w > 0 and lambda_b > 0):
        raise BomcmcError("lambda_w and lambda_b must be positive")
    w, b = Prior(1 / math.sqrt(lambda_w)), Prior(1 / math.sqrt(lambda_b))
    groups: dict[str, Prior] = {}
    if hidden_layers > 0:
        groups["ih0"], groups["bh0"] = w, b
        for layer in range(1, hidden_layers):
            groups[f"hh{layer}"], groups[f"bh{layer}"] = w, b
        groups["ho"] = w
    if io or hidden_layers == 0:
        groups["io"] = w
    groups["bo"] = b
    noise = None if noise_precision is None else Prior(1 / math.sqrt(noise_precision))
    return NetPrior(dict(sorted(groups.items(), key=lambda kv: _group_order(kv[0]))), noise)


def parse_model_spec(text: str) -> tuple[str, Prior | None]:
    """FBM model-spec text: "real 0.05:0.5" -> ("real", noise prior); "binary"; "class"."""
    tokens = text.split()
    if not tokens or tokens[0] not in ("real", "binary", "class"):
        raise BomcmcError(
            f"model spec '{text}': expected 'real <noise prior>', 'binary' or 'class'")
    if tokens[0] == "real":
        if len(tokens) != 2:
            raise BomcmcError(
                f"model spec '{text}': 'real' needs one noise prior, e.g. 'real 0.05:0.5'")
        return "real", Prior.parse(tokens[1])
    if len(tokens) != 1:
        raise BomcmcError(f"model spec '{text}': '{tokens[0]}' takes no prior")
    return tokens[0], None


# ---------------------------------------------------------------------------------------
# Densities and exact conditional draws (jax)
# ---------------------------------------------------------------------------------------
def gamma_logpdf(tau, mean, alpha):
    """log Gamma(τ; mean μ, shape α) in Neal's parametrisation: shape α/2, rate α/(2μ)."""
    k = alpha / 2
    rate = alpha / (2 * mean)
    return k * jnp.log(rate) - gammaln(k) + (k - 1) * jnp.log(tau) - rate * tau


def normal_logpdf(z, precision):
    """log N(z; 0, 1/τ)."""
    return 0.5 * (jnp.log(precision) - jnp.log(2 * jnp.pi)) - 0.5 * precision * z**2


def student_t_logpdf(z, precision, nu):
    """log of z ~ N(0, 1/τ₂), τ₂ ~ Gamma(mean τ, shape ν) with τ₂ integrated out: a Student-t
    with ν degrees of freedom and scale τ^{-1/2}."""
    return (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * jnp.log(nu * jnp.pi)
            + 0.5 * jnp.log(precision) - (nu + 1) / 2 * jnp.log1p(precision * z**2 / nu))


def gamma_conditional(alpha, mean, sum_sq, n):
    """(shape, rate) of τ | z for τ ~ Gamma(mean μ, shape α), n zᵢ ~ N(0, 1/τ) with Σzᵢ² =
    sum_sq: shape (α + n)/2, rate (α/μ + Σzᵢ²)/2 (Choo 2000, eq. 3.11; FBM `net-mc.c`)."""
    return (alpha + n) / 2, (alpha / mean + sum_sq) / 2


def sample_log_gamma(key, shape, rate):
    """log τ for τ ~ Gamma(shape, rate), computed in log space (stable for tiny shapes)."""
    shape = jnp.asarray(shape)
    dtype = jnp.result_type(shape, rate, float)
    return jax.random.loggamma(key, shape, dtype=dtype) - jnp.log(rate)


def upper_conditional(alpha0, mean0, alpha1, sum_lower, n):
    """(a, b, c) of the upper-level conditional: x = log τ has density ∝ exp(a x − b eˣ − c e⁻ˣ)
    for τ ~ Gamma(mean ω, shape α₀) over n precisions τᵢ ~ Gamma(mean τ, shape α₁) summing to
    sum_lower (FBM `prior.c:cond_sigma`, the "upper level" of `net-models.tex`; the +x of the log-τ
    Jacobian is included in a)."""
    return (alpha0 - n * alpha1) / 2, alpha0 / (2 * mean0), alpha1 * sum_lower / 2


MAX_REJECTIONS = 200  # acceptance is about 0.78 for a Gaussian-shaped conditional


def sample_log_upper(key, a, b, c):
    """Exact draw of x with density ∝ exp(a·x − b·eˣ − c·e⁻ˣ), b, c > 0 (log-concave).

    Rejection sampling from a three-piece envelope around the mode m (e^m solves
    b y² − a y − c = 0): tangent lines at m ± w (w = 1.1/√(−h''(m))) and the flat line
    h(m) between. In d = x − m the log density is g(d) = a d − B expm1(d) − C expm1(−d)
    with B = b eᵐ, C = c e⁻ᵐ (g(0) = 0), which is evaluated without cancellation."""
    a, b, c = (jnp.asarray(v) for v in (a, b, c))
    dtype = jnp.result_type(a, b, c, float)
    a, b, c = a.astype(dtype), b.astype(dtype), c.astype(dtype)
    s = jnp.sqrt(a * a + 4 * b * c)
    y = jnp.where(a >= 0, (a + s) / (2 * b), 2 * c / (s - a))  # e^m without cancellation
    m = jnp.log(y)
    big_b, big_c = b * y, c / y

    def g(d):
        return a * d - big_b * jnp.expm1(d) - big_c * jnp.expm1(-d)

    def gp(d):
        return a - big_b * jnp.exp(d) + big_c * jnp.exp(-d)

    w = 1.1 / jnp.sqrt(big_b + big_c)
    gl, gr = g(-w), g(w)
    sl, sr = gp(-w), gp(w)  # sl > 0 > sr by strict concavity
    log_areas = jnp.stack([gl - jnp.log(sl), jnp.log(2 * w), gr - jnp.log(-sr)])

    def propose(k):
        k1, k2, k3 = jax.random.split(k, 3)
        piece = jax.random.categorical(k1, log_areas)
        u = 1.0 - jax.random.uniform(k2, (), dtype)  # (0, 1]
        d = jnp.select([piece == 0, piece == 1],
                       [-w + jnp.log(u) / sl, -w + 2 * w * u], w + jnp.log(u) / sr)
        env = jnp.select([piece == 0, piece == 1], [gl + sl * (d + w), jnp.zeros((), dtype)],
                         gr + sr * (d - w))
        log_v = jnp.log(1.0 - jax.random.uniform(k3, (), dtype))
        return d, log_v < g(d) - env

    def cond(carry):
        i, _, _, done = carry
        return (~done) & (i < MAX_REJECTIONS)

    def body(carry):
        i, k, _, _ = carry
        k, sub = jax.random.split(k)
        d, ok = propose(sub)
        return i + 1, k, d, ok

    _, _, d, _ = jax.lax.while_loop(
        cond, body, (jnp.zeros((), jnp.int32), key, jnp.zeros((), dtype), jnp.zeros((), bool)))
    return m + d
