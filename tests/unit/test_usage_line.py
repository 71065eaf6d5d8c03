"""The usage line under a finished turn and in the drawer's history (app/ui/usage.py)."""

from __future__ import annotations

import json

import pytest

from app.ui.usage import usage_line


@pytest.mark.parametrize(("usage", "line"), [
    ({"input_tokens": 1234, "output_tokens": 567, "cached_tokens": 89, "cost_usd": 0.0123},
     "1,234 in · 567 out · 89 cached · $0.0123"),
    ({"input_tokens": 12, "output_tokens": 3}, "12 in · 3 out"),
    ({"output_tokens": 0, "cost_usd": None}, "0 out"),
    ({"cost_usd": 2.5}, "$2.50"),
    ({"cost_usd": 1234.5}, "$1,234.50"),
    ({"input_tokens": -1, "output_tokens": True, "cached_tokens": "9", "cost_usd": "free"}, ""),
    ({}, ""),
])
def test_only_the_known_parts_are_shown(usage: dict, line: str) -> None:
    assert usage_line(json.dumps(usage)) == line


@pytest.mark.parametrize("raw", [None, "", "not json", "[1]", "3", "[" * 100_000 + "]" * 100_000])
def test_no_or_unreadable_usage_shows_nothing(raw: str | None) -> None:
    assert usage_line(raw) == ""
