"""The random ops: RandomNormal, RandomUniform, their ``*Like`` forms, Multinomial and Bernoulli.

They draw with ``jax.random`` from a key (see :mod:`jaxonnx.ops._helpers.random`): the
node's ``seed`` when it has one, else the caller's key folded with the node's position.
"""
