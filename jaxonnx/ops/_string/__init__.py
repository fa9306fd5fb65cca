"""String ops: RegexFullMatch, StringConcat, StringNormalizer, StringSplit and
TfIdfVectorizer. String tensors are numpy object arrays of ``str`` and run on the eager path
only (JAX cannot hold strings); TfIdfVectorizer on integer tokens is an array program that
also runs under ``jax.jit``."""
