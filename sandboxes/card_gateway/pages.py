"""The hosted payment page's HTML. Deliberately plain: it exists to be clicked in tests
and demos, and every merchant-supplied string is escaped because it is shown verbatim.
"""

from __future__ import annotations

from html import escape

from .state import Payment

_LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body><h1>{title}</h1>{content}
<p><small>Sandbox card gateway: no real money moves.</small></p></body></html>
"""


def _page(title: str, content: str) -> str:
    return _LAYOUT.format(title=escape(title), content=content)


def money(amount: int, currency: str) -> str:
    # Minor units with two decimals covers CZK/EUR; the sandbox needs nothing fancier.
    return f"{amount // 100}.{amount % 100:02d} {escape(currency)}"


def checkout(payment: Payment) -> str:
    details = (
        f'<p>Amount: <strong id="amount">{money(payment.amount, payment.currency)}</strong></p>'
        f"<p>Reference: {escape(payment.params.reference)}</p>"
        f"<p>{escape(payment.params.description or '')}</p>"
    )
    if payment.state != "pending" or payment.settling:
        return _page("Payment", f"{details}<p>This payment is {escape(payment.state)}.</p>")
    buttons = (
        f'<form method="post" action="/checkout/{escape(payment.id)}">'
        '<button name="outcome" value="succeed">Pay</button> '
        '<button name="outcome" value="fail">Decline</button></form>'
    )
    return _page("Payment", details + buttons)


def result(payment: Payment, deferred: bool) -> str:
    if deferred:
        return _page("Payment processing", "<p>Your payment is being processed.</p>")
    return _page("Payment", f"<p>Payment {escape(payment.state)}.</p>")


def error(message: str) -> str:
    return _page("Payment", f"<p>{escape(message)}</p>")
