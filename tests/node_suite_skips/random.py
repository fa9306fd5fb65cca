"""Random ops (RandomNormal, RandomUniform, their Like forms, Multinomial, Bernoulli): cases that cannot pass.

onnx 1.23 has node cases only for Bernoulli (and its expanded function body, which draws with
RandomUniformLike); every one compares with a draw of numpy's generator.
"""

_RANDOM_DRAWS = (
    "the expected output is one draw of numpy's random generator; the operator only specifies the "
    "distribution, and jaxonnx draws with jax.random from the node's seed or the caller's key"
)

SKIPS = {
    "test_bernoulli": _RANDOM_DRAWS,
    "test_bernoulli_double": _RANDOM_DRAWS,
    "test_bernoulli_seed": _RANDOM_DRAWS,
    "test_bernoulli_expanded": _RANDOM_DRAWS,
    "test_bernoulli_double_expanded": _RANDOM_DRAWS,
    "test_bernoulli_seed_expanded": _RANDOM_DRAWS,
}
