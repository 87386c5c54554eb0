"""The console says the same things in both languages, and every text its templates and
scripts ask for exists: a missing key would show the visitor nothing, or a raw key."""

from __future__ import annotations

import re
from pathlib import Path

from gateway_bff.web import console_messages
from gateway_bff.web.messages import TEXTS, Language

WEB = Path(__file__).resolve().parents[3] / "gateway_bff/web"
ASKED = re.compile(r"\bt\.([a-z_]+)|\btexts\.([a-z_]+)")


def test_both_languages_have_the_same_console_texts_and_problems() -> None:
    cs, en = Language.CS, Language.EN
    assert set(console_messages.TEXTS[cs]) == set(console_messages.TEXTS[en])
    assert set(console_messages.PROBLEMS[cs]) == set(console_messages.PROBLEMS[en])


def test_every_text_the_console_asks_for_is_there() -> None:
    sources = [*WEB.glob("templates/console/*.html"), *WEB.glob("templates/errors/*.html")]
    sources += [*WEB.glob("static/console/*.js")]
    known = set(TEXTS[Language.EN]) | set(console_messages.TEXTS[Language.EN])
    asked = {a or b for path in sources for a, b in ASKED.findall(path.read_text())}
    assert asked and asked <= known, sorted(asked - known)
