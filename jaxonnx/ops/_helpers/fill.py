"""The padding value of a size-hinted output (Compress, Unique): exactly the value asked for."""

from __future__ import annotations

import numpy as np

from jaxonnx._errors import OnnxTypeError, OnnxValidationError


def padding_scalar(fill_value, dtype: np.dtype, *, name: str = "input"):
    """``fill_value`` as a scalar of ``dtype``, refused unless ``dtype`` holds it exactly: the
    value of the padding of a size-hinted output (Compress, Unique).

    None gives the default: 0 (False for bool), or "" for string data. ``name`` is the
    padded input, as errors name it.
    """
    if dtype.kind in "OUS":
        if fill_value is None:
            return ""
        exact = isinstance(fill_value, str) and (
            dtype.kind == "O" or str(np.asarray(fill_value).astype(dtype)[()]) == fill_value
        )
        if not exact:
            raise OnnxTypeError(
                f"pads string data (dtype {dtype}) with `fill_value`, which must be a string "
                f"that the dtype holds, got {fill_value!r}."
            )
        return fill_value
    if fill_value is None:
        return np.zeros((), dtype)[()]
    try:
        value = np.asarray(fill_value)[()] if not isinstance(fill_value, int) else fill_value
        number = complex(value) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or np.ndim(fill_value) != 0 or isinstance(value, (str, bytes)):
        raise OnnxTypeError(f"needs a scalar number `fill_value` for dtype {dtype}, got {fill_value!r}.")
    refusal = OnnxValidationError(
        f"got `fill_value`={fill_value!r}, which dtype {dtype} of `{name}` cannot hold exactly; "
        f"the padding would not be {fill_value!r}, so it is refused."
    )
    if dtype.kind in "biu":
        # Integer and bool padding must be exact: compare as Python numbers, no wrap-around.
        if number.imag != 0 or not np.isfinite(number.real) or number.real != int(number.real):
            raise refusal
        integer = int(value.real) if isinstance(value, complex) else int(value)
        low, high = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if not low <= integer <= high:
            raise refusal
        return np.asarray(integer).astype(dtype)[()]
    # Float and complex dtypes round to the nearest value, as JAX does with Python floats
    # (0.1 for float32); an imaginary part a real dtype would drop, or an overflow to
    # infinity, is refused.
    if number.imag != 0 and dtype.kind != "c":
        raise refusal
    with np.errstate(all="ignore"):
        cast = np.asarray(number if dtype.kind == "c" else number.real).astype(dtype)
        if np.isfinite(number) and not np.isfinite(cast.astype(np.complex128)):
            raise refusal
    return cast[()]
