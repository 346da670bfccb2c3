"""Visible text of an HTML page, with headings as Markdown `#` lines (stdlib parser only)."""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser

log = logging.getLogger(__name__)

_HIDDEN = frozenset({"script", "style", "noscript", "template", "head", "svg", "canvas", "iframe"})
_BLOCK = frozenset(
    [
        "p",
        "div",
        "section",
        "article",
        "aside",
        "header",
        "footer",
        "nav",
        "main",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "tr",
        "blockquote",
        "figure",
        "figcaption",
        "form",
        "fieldset",
        "details",
        "summary",
        "address",
        "hr",
        "br",
        "pre",
    ]
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")  # lines are right-stripped first


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.hidden_depth = 0
        self.pre_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self.hidden_depth += 1
        elif tag in _HEADINGS:
            self.out.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCK:
            self.out.append("\n\n" if tag in ("p", "pre", "table", "blockquote") else "\n")
            if tag == "pre":
                self.pre_depth += 1
            elif tag == "li":
                self.out.append("- ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden_depth = max(0, self.hidden_depth - 1)
        elif tag in _HEADINGS:
            self.out.append("\n\n")
        elif tag in _BLOCK:
            if tag == "pre":
                self.pre_depth = max(0, self.pre_depth - 1)
            self.out.append("\n")
        elif tag in ("td", "th"):
            self.out.append(" | ")

    def handle_data(self, data: str) -> None:
        if self.hidden_depth:
            return
        if self.pre_depth:
            self.out.append(data)
        else:
            self.out.append(_SPACES.sub(" ", data.replace("\n", " ")))


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    try:
        parser.feed(html)
        parser.close()
    # html.parser is lenient; a truly broken page still keeps what was read. AssertionError is
    # all html.parser and _markupbase raise on markup they cannot parse (CPython 3.11-3.13).
    except AssertionError as exc:
        log.debug("HTML parsing stopped early: %s", exc)
    text = "".join(parser.out)
    # Headings must stay on one line for the Markdown chunker.
    text = re.sub(r"(?m)^(#{1,6}) +", r"\1 ", text)
    lines = [line.rstrip() for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip("\n") + "\n"
