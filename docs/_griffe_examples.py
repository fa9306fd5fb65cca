"""A griffe extension for the API reference: jaxonnx's docstrings head their doctests
``Example:``, which Google style (Napoleon) reads as an examples section and griffe only
knows as ``Examples:``; without this, their ``>>>`` lines render as Markdown block quotes."""

from __future__ import annotations

import re

import griffe

_EXAMPLE_HEADING = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE_HEADING.sub(r"\1Examples:", obj.docstring.value)
