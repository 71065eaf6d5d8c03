"""Agent replies as Markdown, safely (SPEC §11): what an agent writes may come from anywhere it read.

``rx.markdown`` (react-markdown 10) is used without its defaults that matter here:
- no ``rehype-raw``: raw HTML in a reply stays text (``rx.markdown`` turns it on by default, which
  would let ``<img src=x onerror=…>`` run script in the page);
- no math/KaTeX: agents write prices ("$5 and $10"), which math parsing would mangle;
- links: a URL transform keeps only ``http:``, ``https:`` and ``mailto:`` (anything else, such as
  ``javascript:`` or a relative path, loses its ``href``: a dead link showing its text); links open
  in a new tab with ``rel="noopener noreferrer nofollow"``;
- images are not loaded (a remote image in an agent's reply can carry data out in its URL): an
  image shows as a link to it, named by its alt text;
- code blocks are plain ``pre`` (no highlighter bundle): long lines scroll inside the block.
"""

from __future__ import annotations

from typing import Any

import reflex as rx
from reflex_base.components.component import Component, field
from reflex_base.vars.base import Var
from reflex_components_core.el.elements.inline import A
from reflex_components_markdown.markdown import Markdown

# react-markdown calls this for every href/src; returning undefined drops the attribute.
SAFE_URL = Var(_js_expr="((url) => (/^(https?:|mailto:)/i.test(String(url).trim()) ? url : undefined))")
LINK_REL = "noopener noreferrer nofollow"
_CODE_FONT = "var(--code-font-family)"


class SafeMarkdown(Markdown):
    """react-markdown with its ``urlTransform`` exposed (Reflex's wrapper has no field for it)."""

    url_transform: Var[Any] = field(doc="react-markdown's urlTransform(url, key, node) → url | undefined")


def _link(text: Any, **_: Any) -> Component:
    # A plain <a>: rx.el.a becomes a router link, and rx.link defaults href to "#" (a live link).
    return A.create(text, target="_blank", rel=LINK_REL, color="var(--accent-11)", text_decoration="underline")


def _image(_: Any, **__: Any) -> Component:
    # The element's props (src → href after the transform, alt) are spread on it by react-markdown.
    return A.create(Var(_js_expr="(props.alt || props.src || 'image')"), href=Var(_js_expr="props.src"),
                    target="_blank", rel=LINK_REL, color="var(--accent-11)", text_decoration="underline")


def _code_block(text: Any, **_: Any) -> Component:
    return rx.el.pre(
        rx.el.code(text, font_family=_CODE_FONT),
        overflow_x="auto", max_width="100%", padding="0.6em 0.8em", margin="0.5em 0", border_radius="8px",
        background="var(--gray-a3)", font_size="var(--font-size-1)", line_height="1.5", white_space="pre",
    )


def _table(text: Any, **_: Any) -> Component:
    return rx.box(rx.el.table(text, border_collapse="collapse", font_size="var(--font-size-2)"),
                  overflow_x="auto", max_width="100%", margin="0.5em 0")


def _cell(tag: str) -> Any:
    def make(text: Any, **_: Any) -> Component:
        element = rx.el.th if tag == "th" else rx.el.td
        return element(text, border="1px solid var(--gray-6)", padding="0.25em 0.6em", text_align="left",
                       vertical_align="top", min_width="3em")
    make.__qualname__ = f"_cell_{tag}"  # the component map is hashed by qualified name
    return make


def _heading(tag: str, size: str) -> Any:
    def make(text: Any, **_: Any) -> Component:
        return rx.heading(text, as_=tag, size=size, margin="0.6em 0 0.3em")
    make.__qualname__ = f"_heading_{tag}"
    return make


def _paragraph(text: Any, **_: Any) -> Component:
    return rx.text(text, as_="p", size="2", margin="0.4em 0")


COMPONENT_MAP = {
    "a": _link, "img": _image, "pre": _code_block, "table": _table, "th": _cell("th"), "td": _cell("td"),
    "h1": _heading("h1", "5"), "h2": _heading("h2", "4"), "h3": _heading("h3", "3"),
    "h4": _heading("h4", "2"), "h5": _heading("h5", "2"), "h6": _heading("h6", "2"), "p": _paragraph,
}
# The bubble's first and last blocks sit flush with its padding.
WRAPPER_STYLE = {
    "& > :first-child": {"margin_top": "0"}, "& > :last-child": {"margin_bottom": "0"},
    "& a:not([href])": {"color": "inherit", "text_decoration": "none", "cursor": "text"},  # a refused URL
    "& ul, & ol": {"margin": "0.4em 0", "padding_left": "1.4em"}, "& li": {"margin": "0.15em 0"},
    "& blockquote": {"margin": "0.4em 0", "padding_left": "0.8em", "border_left": "3px solid var(--gray-6)",
                     "color": "var(--gray-11)"},
}


@rx.memo
def markdown(source: rx.Var[str]) -> rx.Component:
    """A reply rendered as Markdown (GitHub flavour: tables, task lists, strikethrough, autolinks).

    A memo (React.memo): while one reply streams, the other replies of the transcript are not
    parsed again on every chunk (with 150 replies on the page that took seconds per chunk).
    """
    return rx.box(
        SafeMarkdown.create(source, component_map=COMPONENT_MAP, url_transform=SAFE_URL,
                            remark_plugins=[rx.markdown.plugin.gfm]),
        style=WRAPPER_STYLE, min_width="0", overflow_wrap="break-word", font_size="var(--font-size-2)",
    )
