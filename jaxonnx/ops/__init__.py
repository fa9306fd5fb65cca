"""ONNX operators as exact, differentiable, jit-compilable JAX functions.

Each function has the semantics of the newest ONNX version of its op; every older
version is registered in :func:`jaxonnx.get_op`. Every module of this package is one op
(or a small family) and registers itself on import; its ``__all__`` names the public
functions re-exported here.
"""

import importlib as _importlib
import pkgutil as _pkgutil

__all__: list[str] = []
for _module_info in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _module_info.name == "_common":
        continue
    _module = _importlib.import_module(f"{__name__}.{_module_info.name}")
    for _name in getattr(_module, "__all__", ()):
        _value = getattr(_module, _name)
        # A registered op is exported as its newest version, converting inputs as the registry does.
        globals()[_name] = _value.onnx_op.public_function() if hasattr(_value, "onnx_op") else _value
        __all__.append(_name)
__all__.sort()
del _importlib, _pkgutil, _module_info, _module, _name, _value
