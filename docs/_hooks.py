"""MkDocs hooks for the docs site (listed under `hooks:` in mkdocs.yml).

mkdocs-jupyter builds a notebook page's table of contents from the notebook converted to
Markdown, whose heading titles and anchors Python-Markdown derives with inline code left
out, while the page's headings get their ids from nbconvert, with the code's text kept: a
heading "Compress under `jax.jit`" was listed as "Compress under", linked to
`#compress-under`, and has the id `compress-under-jaxjit`. The table of contents lists the
headings in their order, so this gives each entry the id and the text of its heading."""

from __future__ import annotations

import html
import re

_HEADING = re.compile(r"<h[1-6][^>]*\bid=\"([^\"]+)\"[^>]*>(.*?)</h[1-6]>", re.S)


def _flatten(items):
    for item in items:
        yield item
        yield from _flatten(item.children)


def on_page_context(context, page, config, nav):
    if page.file.src_uri.endswith(".ipynb") and page.content:
        headings = _HEADING.findall(page.content)
        entries = list(_flatten(page.toc.items))
        if len(headings) == len(entries):
            for entry, (anchor, inner) in zip(entries, headings):
                entry.id = anchor
                text = html.unescape(re.sub(r"<[^>]+>", "", inner)).replace("¶", "").strip()
                entry.title = text or entry.title
    return context
