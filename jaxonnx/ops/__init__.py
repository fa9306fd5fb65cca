"""ONNX operators as exact, differentiable, jit-compilable JAX functions.

Each function has the semantics of the newest ONNX version of its op; every older
version is registered in :func:`jaxonnx.get_op`. The ops live in one folder per family
(``_elementwise``, ``_shape``, ``_indexing``, ``_nn``, ``_reduction``, ...); every module
there is one op (or a small family of ops) and registers itself on import, and its
``__all__`` names the public functions re-exported here. ``_helpers`` holds what several
families share and registers nothing. No op module imports another op module.
"""

import importlib as _importlib
import pkgutil as _pkgutil

__all__: list[str] = []
for _family in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _family.ispkg or _family.name == "_helpers":
        continue
    _package = _importlib.import_module(f"{__name__}.{_family.name}")
    for _module_info in sorted(_pkgutil.iter_modules(_package.__path__), key=lambda m: m.name):
        _module = _importlib.import_module(f"{_package.__name__}.{_module_info.name}")
        for _name in getattr(_module, "__all__", ()):
            if _name in globals():
                raise ImportError(f"jaxonnx.ops.{_name} is exported twice (again by {_module.__name__}).")
            _value = getattr(_module, _name)
            # A registered op is exported as its newest version, converting inputs as the registry does.
            globals()[_name] = _value.onnx_op.public_function() if hasattr(_value, "onnx_op") else _value
            __all__.append(_name)
__all__.sort()
del _importlib, _pkgutil, _family, _package, _module_info, _module, _name, _value
