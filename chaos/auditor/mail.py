"""At most one mail per delivery key, and what notify says of each delivery agrees with the
mail server: a sent one arrived once, an `unknown` one has its incident, the server holds no
mail of the platform that notify has no delivery for, and a grant has one access mail."""

from __future__ import annotations

from collections import Counter

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import Stores
from services.notify.domain.model import MESSAGE_ID_DOMAIN, Decision, Template, message_id
from services.notify.service_layer.sending import UNKNOWN_INCIDENT

ONE_MAIL = "at_most_one_mail_per_delivery"
AGREES = "delivery_agrees_with_the_mail_server"
NO_STRAY_MAIL = "no_mail_without_a_delivery"
ONE_ACCESS_MAIL = "one_access_mail_per_grant"


def check_mail(stores: Stores) -> Findings:
    findings = Findings()
    for delivery in stores.deliveries:
        copies = stores.mail_copies.get(delivery.delivery_key)
        ids = {"delivery_key": delivery.delivery_key, "source": delivery.source}
        server = "cannot tell" if copies is None else f"{copies} copies received"
        findings.check(
            ONE_MAIL, copies is None or copies <= 1, ids, notify=delivery.state, mail=server
        )
        about = stores.incidents_about(delivery.delivery_key)
        incident = [i for i in about if i.kind == UNKNOWN_INCIDENT and i.state == "open"]
        # An operator who marked it sent knows better than the server's log.
        marked = any(i.decision == Decision.MARK_SENT.value for i in about)
        agrees = {
            "sent": copies is None or copies == 1 or (copies == 0 and marked),
            "unknown": bool(incident),
        }.get(delivery.state, True)
        findings.check(
            AGREES,
            agrees,
            ids,
            notify=f"{delivery.state} ({delivery.template}), {len(incident)} open "
            f"{UNKNOWN_INCIDENT} incidents",
            mail=server,
        )
    known = {message_id(d.delivery_key) for d in stores.deliveries}
    for mail_id, count in sorted(stores.mail_message_ids.items()):
        findings.check(
            NO_STRAY_MAIL,
            mail_id in known or not mail_id.endswith(f"@{MESSAGE_ID_DOMAIN}>"),
            {"message_id": mail_id},
            mail=f"{count} messages with this Message-ID",
            notify="no delivery with this key",
        )
    access: Counter[str] = Counter(
        d.source for d in stores.deliveries if d.template == Template.ACCESS_DETAILS.value
    )
    for source, count in sorted(access.items()):
        findings.check(
            ONE_ACCESS_MAIL, count == 1, {"source": source}, notify=f"{count} access deliveries"
        )
    return findings
