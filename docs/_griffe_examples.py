"""A griffe extension for the API reference, which renders docstrings as Markdown.

jaxonnx's docstrings head their doctests ``Example:``, which Google style (Napoleon) reads
as an examples section and griffe only knows as ``Examples:``; without this, their ``>>>``
lines render as Markdown block quotes. And some cross-reference with Sphinx roles
(``:func:`jaxonnx.get_op` ``), which Markdown would print as they are: they become code."""

from __future__ import annotations

import re

import griffe

_EXAMPLE_HEADING = re.compile(r"^(\s*)Example:\s*$", re.M)
_SPHINX_ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|obj|exc):`~?([^`]+)`")


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            text = _EXAMPLE_HEADING.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = _SPHINX_ROLE.sub(r"`\1`", text)
