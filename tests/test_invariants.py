"""Every promise of the invariants has tests that exist, or says which issue brings them."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.invariants import PROMISES, Promise

REPO = Path(__file__).resolve().parent.parent


@cache
def _test_functions(path: str) -> frozenset[str]:
    tree = ast.parse((REPO / path).read_text())
    return frozenset(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    )


def test_the_promises_are_numbered_one_to_twenty_three_without_a_gap() -> None:
    assert [promise.number for promise in PROMISES] == list(range(1, 24))


@pytest.mark.parametrize("promise", PROMISES, ids=lambda promise: f"invariant-{promise.number}")
def test_each_promise_names_tests_that_exist_or_the_issue_that_brings_them(
    promise: Promise,
) -> None:
    assert promise.tests or promise.still_to_come, "a promise with no test and no plan"
    if promise.still_to_come:
        assert re.search(r"\(issue \d+", promise.still_to_come), promise.still_to_come
    for test in promise.tests:
        path, _, name = test.partition("::")
        assert (REPO / path).is_file(), f"{test}: no such file"
        assert name in _test_functions(path), f"{test}: no such test"
