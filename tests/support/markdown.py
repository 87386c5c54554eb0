"""Headings, anchors and links of the repository's Markdown documents, read as GitHub reads
them, so a test can tell whether a link or an alert's runbook_url leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation dropped (hyphens and
    underscores kept), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text, not its target
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _outside_fences(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(document: Path) -> set[str]:
    """Every anchor of a document's headings; a repeated one gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in _outside_fences(document.read_text()):
        heading = _HEADING.match(line)
        if not heading:
            continue
        base = anchor(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(document: Path) -> list[str]:
    """The targets of a document's links and images, code blocks left out."""
    targets = []
    for line in _outside_fences(document.read_text()):
        line = re.sub(r"`[^`]*`", "", line)  # code spans show links, they are none
        targets += [a or b for a, b in _LINK.findall(line)]
    return targets
