"""The input checks (validation.py): each accepts good values, returning them in their
canonical type, and rejects bad ones with a one-line `BomcmcError` naming the input."""

import math

import numpy as np
import pytest

from bomcmc import BomcmcError, validation as v


def _one_line_error(fn, *args, name=None, **kw) -> str:
    """The message of the BomcmcError that fn raises: one line, naming `name` when given."""
    with pytest.raises(BomcmcError) as err:
        fn(*args, **kw)
    message = str(err.value)
    assert "\n" not in message, message
    if name is not None:
        assert name in message, message
    return message


def test_the_error_is_a_value_error():
    assert issubclass(BomcmcError, ValueError)


# ---------------------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("x", [0, 3, -2, 1.5, float("inf"), float("nan"), np.int32(4),
                               np.int64(-1), np.float32(0.5), np.float64(2.0)])
def test_is_number_accepts_python_and_numpy_reals(x):
    assert v.is_number(x)


@pytest.mark.parametrize("x", [True, False, np.bool_(True), "1", None, [1], 1 + 0j,
                               np.array([1.0])])
def test_is_number_rejects_bools_and_non_numbers(x):
    assert not v.is_number(x)


@pytest.mark.parametrize("x", [0, 7, -3, np.int8(1), np.int64(10**12), np.uint32(5)])
def test_is_int_accepts_python_and_numpy_integers(x):
    assert v.is_int(x)


@pytest.mark.parametrize("x", [True, False, np.bool_(False), 1.0, np.float64(2.0), "3", None])
def test_is_int_rejects_bools_floats_and_non_numbers(x):
    assert not v.is_int(x)


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("x", [1e-12, 0.3, 1, 5, np.float32(0.25), np.int64(3), 1e300])
def test_positive_number_accepts_and_returns_a_float(x):
    out = v.positive_number("step_size", x)
    assert type(out) is float and out == float(x)


@pytest.mark.parametrize("x", [0, 0.0, -1, -1e-9, float("inf"), float("nan"), True, "0.1",
                               None, [0.1]])
def test_positive_number_rejects(x):
    msg = _one_line_error(v.positive_number, "step_size", x, name="step_size")
    assert "positive finite number" in msg


@pytest.mark.parametrize("x, want", [(1, 1), (10, 10), (10.0, 10), (np.int32(7), 7),
                                     (np.float64(3.0), 3)])
def test_whole_number_accepts_ints_and_whole_floats(x, want):
    out = v.whole_number("steps", x)
    assert type(out) is int and out == want


@pytest.mark.parametrize("x", [0, -3, 0.0, 2.5, 1e-3, float("inf"), float("nan"), True, False,
                               "4", None])
def test_whole_number_rejects(x):
    msg = _one_line_error(v.whole_number, "steps", x, name="steps")
    assert "positive integer" in msg


@pytest.mark.parametrize("x, lo, most", [(1, 1, None), (5, 1, 5), (0, 0, None), (2, 2, 3),
                                         (np.int64(4), 1, None), (-2, -5, 0)])
def test_integer_accepts_within_bounds(x, lo, most):
    out = v.integer("chains", x, lo=lo, most=most)
    assert type(out) is int and out == int(x)


@pytest.mark.parametrize("x, lo, most, words", [
    (0, 1, None, "a positive integer"),
    (-1, 0, None, "a non-negative integer"),
    (1, 2, None, "an integer >= 2"),
    (6, 1, 5, "a positive integer <= 5"),
    (2.0, 1, None, "a positive integer"),  # a float, even a whole one, is not an integer
    (True, 1, None, "a positive integer"),  # a bool is not a number
    ("3", 1, None, "a positive integer"),
    (None, 0, None, "a non-negative integer"),
])
def test_integer_rejects_with_the_range_in_words(x, lo, most, words):
    msg = _one_line_error(v.integer, "chains", x, lo=lo, most=most, name="chains")
    assert words in msg and repr(x) in msg


@pytest.mark.parametrize("x", [1e-9, 0.5, 0.8, 1 - 1e-9, np.float32(0.65)])
def test_probability_accepts_the_open_interval(x):
    out = v.probability("target_accept", x)
    assert type(out) is float and out == float(x)


@pytest.mark.parametrize("x", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), True, "0.8", None])
def test_probability_rejects(x):
    msg = _one_line_error(v.probability, "target_accept", x, name="target_accept")
    assert "(0, 1)" in msg


@pytest.mark.parametrize("x, want", [(1, 1), (10, 10), (30, 30), (10.0, 10), (np.int32(8), 8)])
def test_tree_depth_accepts_1_to_30(x, want):
    out = v.tree_depth(x)
    assert type(out) is int and out == want


@pytest.mark.parametrize("x", [0, 31, -1, 2.5, float("inf"), float("nan"), True, "10", None])
def test_tree_depth_rejects(x):
    msg = _one_line_error(v.tree_depth, x, name="max_tree_depth")
    assert "1..30" in msg


# ---------------------------------------------------------------------------------------
# Boxes, choices, data
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("x, want", [((0.01, 0.3), [0.01, 0.3]), ([1, 1], [1.0, 1.0]),
                                     (np.array([0.5, 2.0]), [0.5, 2.0])])
def test_pair_accepts_a_box_and_returns_floats(x, want):
    out = v.pair("eps_bounds", x)
    assert out == want and all(type(b) is float for b in out)


@pytest.mark.parametrize("x, words", [
    (0.1, "two numbers"),  # not iterable
    ((0.1,), "two numbers"),
    ((0.1, 0.2, 0.3), "two numbers"),
    (("a", 1), "two numbers"),
    ((0.0, 1.0), "0 < lo <= hi"),
    ((-1.0, 1.0), "0 < lo <= hi"),
    ((0.3, 0.1), "0 < lo <= hi"),
    ((0.1, float("inf")), "0 < lo <= hi"),
    ((float("nan"), 1.0), "0 < lo <= hi"),
])
def test_pair_rejects(x, words):
    msg = _one_line_error(v.pair, "eps_bounds", x, name="eps_bounds")
    assert words in msg


@pytest.mark.parametrize("x", [(1, 100), (1.5, 2.5), (3, 3), (0.5, 1)])
def test_integer_pair_needs_an_integer_at_least_1_inside(x):
    assert v.pair("steps_bounds", x, integer=True) == [float(x[0]), float(x[1])]


@pytest.mark.parametrize("x", [(1.2, 1.8), (0.1, 0.9), (2.5, 2.5)])
def test_integer_pair_rejects_a_box_without_an_integer(x):
    msg = _one_line_error(v.pair, "steps_bounds", x, integer=True, name="steps_bounds")
    assert "an integer >= 1" in msg


def test_choice_accepts_a_member_and_names_the_alternatives():
    assert v.choice("reward", "esjd", ("esjd", "acf")) is None
    msg = _one_line_error(v.choice, "reward", "ess2", ("esjd", "acf"), name="reward")
    assert "esjd, acf" in msg and "'ess2'" in msg
    msg = _one_line_error(v.choice, "reward", "x", ["esjd"], hint=" (see docs/tuning.md)")
    assert msg.endswith(" (see docs/tuning.md)")


def test_finite_data_accepts_finite_and_empty_arrays():
    assert v.finite_data("logistic", X=np.ones((3, 2)), y=[0, 1, 1], empty=np.zeros(0)) is None


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finite_data_names_the_model_the_array_and_the_count(bad):
    X = np.ones((4, 3))
    X[0, 1] = X[2, 2] = bad
    msg = _one_line_error(v.finite_data, "logistic", y=np.zeros(4), X=X, name="logistic")
    assert "'X'" in msg and "2 non-finite" in msg and "'y'" not in msg
    assert msg.endswith(f"the first {bad} at row 0 ([0, 1])")  # issue 31: the first bad row
    assert math.isfinite(X[1, 1])  # the input is not modified


def test_inverse_mass_defaults_to_the_identity():
    np.testing.assert_array_equal(v.inverse_mass(3), np.ones(3))
    np.testing.assert_array_equal(v.inverse_mass(3, dense=True), np.eye(3))


def test_inverse_mass_accepts_a_positive_diagonal_or_an_spd_matrix():
    np.testing.assert_array_equal(v.inverse_mass(2, [0.5, 2]), [0.5, 2.0])
    np.testing.assert_array_equal(v.inverse_mass(2, [0.5, 2], dense=True), np.diag([0.5, 2.0]))
    spd = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(v.inverse_mass(2, spd), spd)


@pytest.mark.parametrize("value, words", [
    (np.ones(3), "shape"),
    (np.ones((2, 3)), "shape"),
    ([1.0, np.nan], "finite"),
    ([1.0, 0.0], "positive"),
    ([[1.0, 2.0], [0.0, 1.0]], "symmetric positive definite"),  # not symmetric
    ([[1.0, 2.0], [2.0, 1.0]], "symmetric positive definite"),  # indefinite
])
def test_inverse_mass_rejects(value, words):
    msg = _one_line_error(v.inverse_mass, 2, value, name="inverse_mass_matrix")
    assert words in msg


def test_a_runs_counts_may_be_numpy_numbers_and_a_string_count_is_one_line(tmp_path):
    """A seed from `rng.integers` (NumPy's int64, which JSON cannot hold) ran the whole run,
    then failed writing run.json with a TypeError; a string count failed with a TypeError
    before validation. The counts are now Python numbers in config.json."""
    import json

    import jax.numpy as jnp

    import bomcmc

    def logdensity(x):
        return -0.5 * jnp.sum(x ** 2)

    counts = dict(chains=np.int64(2), draws=np.int32(20), warmup=np.int64(10),
                  seed=np.int64(3), thin=np.int64(1), until_ess=np.int64(5))
    res = bomcmc.sample(logdensity, jnp.zeros(1), sampler="hmc", step_size=np.float32(0.5),
                        steps=np.int64(3), out=tmp_path / "run", progress=False, **counts)
    assert res.idata.posterior["x"].shape[:2] == (2, 20)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert all(type(saved[k]) is int for k in ("chains", "draws", "warmup", "seed", "thin"))
    assert saved["until_ess"] == 5.0
    message = _one_line_error(bomcmc.sample, logdensity, jnp.zeros(1), chains="4",
                              progress=False, name="chains")
    assert "positive integer" in message
