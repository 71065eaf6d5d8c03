"""A new chat's title from its first message (SPEC §16): first line, trimmed, cut with an ellipsis."""

from __future__ import annotations

from app.core.chats import AUTO_TITLE_CHARS, DEFAULT_TITLE, title_from_message


def test_the_first_non_blank_line_trimmed_and_collapsed() -> None:
    assert title_from_message("\n\n   Plan the   release \t notes  \nsecond line") == "Plan the release notes"


def test_a_short_line_is_kept_whole() -> None:
    assert title_from_message("hello") == "hello"
    line = "x" * AUTO_TITLE_CHARS
    assert title_from_message(line) == line


def test_a_long_line_is_cut_at_a_word_with_an_ellipsis() -> None:
    text = "Summarise every open issue of the tracker, group them by area and suggest owners for each"
    title = title_from_message(text)
    assert title.endswith("…") and len(title) <= AUTO_TITLE_CHARS
    assert text.startswith(title[:-1]) and text[len(title) - 1] in " ,"  # cut between words


def test_a_long_word_is_cut_mid_word() -> None:
    title = title_from_message("y" * 500)
    assert title == "y" * (AUTO_TITLE_CHARS - 1) + "…"


def test_blank_text_keeps_the_default_title() -> None:
    assert title_from_message(" \n\t\n") == DEFAULT_TITLE
