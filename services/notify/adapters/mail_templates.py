"""The mails' words: Jinja2 templates, plain text and HTML, Czech and English.

Each template has `<name>.<locale>.txt` (blocks `subject` and `body`) and
`<name>.<locale>.html` (HTML, escaped automatically). Amounts are formatted for the
locale (Babel) from minor units; times are shown in the studio's time zone. Undefined
values are errors (StrictUndefined), so a template that names a value the mail does not
have fails the test suite that renders every template in every locale, not a customer's
mail at night.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from babel.dates import format_date, format_time
from babel.numbers import format_currency, get_currency_precision
from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError, select_autoescape

from services.notify.domain.model import Template

FOLDER = Path(__file__).parent / "templates"
LOCALES = ("cs", "en")


class RenderError(Exception):
    """A template could not be rendered with the values of a delivery."""


class Rendered:
    def __init__(self, subject: str, text: str, html: str) -> None:
        self.subject = subject
        self.text = text
        self.html = html


class MailTemplates:
    def __init__(self, folder: Path = FOLDER) -> None:
        self._env = Environment(
            loader=FileSystemLoader(folder),
            autoescape=select_autoescape(["html"]),
            undefined=StrictUndefined,
            keep_trailing_newline=True,
        )

    def render(self, template: Template, locale: str, values: dict[str, Any]) -> Rendered:
        if locale not in LOCALES:
            raise RenderError(f"no templates in locale {locale!r}")
        context = {**values, **_formatters(locale, str(values.get("timezone") or "UTC"))}
        try:
            text = self._env.get_template(f"{template.value}.{locale}.txt")
            blocks = text.new_context(context)
            subject = "".join(text.blocks["subject"](blocks)).strip()
            body = "".join(text.blocks["body"](text.new_context(context))).strip() + "\n"
            html = self._env.get_template(f"{template.value}.{locale}.html").render(context)
        except (TemplateError, KeyError, ValueError, TypeError) as error:
            raise RenderError(f"{template.value}.{locale}: {type(error).__name__}") from error
        return Rendered(" ".join(subject.split()), body, html)


def _formatters(locale: str, timezone: str) -> dict[str, Any]:
    zone = ZoneInfo(timezone)

    def money(minor: int, currency: str) -> str:
        digits = get_currency_precision(currency)
        amount = Decimal(int(minor)).scaleb(-digits)
        return str(format_currency(amount, currency, locale=locale))

    def when(iso: str) -> str:
        """The day and the time of day, in the studio's zone: "15. ledna 2030 17:00"."""
        moment = datetime.fromisoformat(iso).astimezone(zone)
        day = format_date(moment, "long", locale=locale)
        return f"{day} {format_time(moment, 'short', tzinfo=zone, locale=locale)}"

    def time_of(iso: str) -> str:
        moment = datetime.fromisoformat(iso).astimezone(zone)
        return str(format_time(moment, "short", tzinfo=zone, locale=locale))

    return {"money": money, "when": when, "time_of": time_of, "zone": timezone}
