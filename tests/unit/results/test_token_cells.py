"""The token cells of the report's usage tables (text and HTML): unknown tokens never print as 0."""

from __future__ import annotations

from engine.results.costs import RoleCost


def test_tokens_no_request_reported_are_unknown_not_0() -> None:
    assert RoleCost(calls=3, unreported=3).token_cells() == ("unknown", "unknown")


def test_partly_reported_tokens_say_how_many_requests_are_unknown() -> None:
    cells = RoleCost(prompt_tokens=1200, completion_tokens=30, calls=4, unreported=1).token_cells()
    assert cells == ("1,200 (1 of 4 requests unknown)", "30 (1 of 4 requests unknown)")


def test_fully_reported_tokens_are_plain_counts() -> None:
    assert RoleCost(prompt_tokens=1200, completion_tokens=30, calls=4).token_cells() == ("1,200", "30")
