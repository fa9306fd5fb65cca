"""Optional dependencies, imported when an op first needs them: a missing one is an error
that names the extra to install. Registers no op."""

from __future__ import annotations

import importlib

from jaxonnx._errors import UnsupportedOpError


def import_optional(module: str, *, package: str, extra: str, needed_for: str):
    """The module ``module``, imported now; ``package`` is what pip installs it as.

    Raises:
        UnsupportedOpError: if it cannot be imported, saying ``pip install 'jaxonnx[extra]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UnsupportedOpError(
            f"needs {package} {needed_for}, and it is not installed (importing {module!r} failed: {error}); "
            f"install it with `pip install 'jaxonnx[{extra}]'`."
        ) from error
