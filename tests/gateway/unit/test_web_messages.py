"""The pages say every problem the API can answer in both languages, and have the same texts
in both: a code without a sentence would show the customer only the fallback."""

from __future__ import annotations

from gateway_bff.problems import _STATUS_OF_REASON
from gateway_bff.web.messages import PROBLEMS, TEXTS, Language

# Codes the gateway answers itself, beside the services' reasons.
GATEWAY_CODES = {
    "unauthenticated",
    "forbidden",
    "not_found",
    "malformed_json",
    "malformed_request",
    "method_not_allowed",
    "payload_too_large",
    "rate_limited",
    "idempotency_key_required",
    "invalid_idempotency_key",
    "validation_error",
    "service_unavailable",
    "not_ready",
    "internal",
}


def test_every_problem_code_has_a_sentence_in_both_languages() -> None:
    for language in Language:
        missing = (set(_STATUS_OF_REASON) | GATEWAY_CODES) - set(PROBLEMS[language])
        assert not missing, f"{language}: no sentence for {sorted(missing)}"
        assert PROBLEMS[language]["network"] and PROBLEMS[language]["fallback"]


def test_both_languages_have_the_same_texts() -> None:
    assert set(TEXTS[Language.CS]) == set(TEXTS[Language.EN])
    assert set(PROBLEMS[Language.CS]) == set(PROBLEMS[Language.EN])
