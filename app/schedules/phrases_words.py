"""Words of the schedule phrase grammar (SPEC §20): the tokenizer, the vocabulary and a cursor.

A phrase is cut into tokens by one table of token kinds; a character no kind takes stops the
parse, naming the run of text it belongs to. The grammar (``app/schedules/phrases.py``) walks the
tokens with a :class:`Cursor` whose every refusal quotes the text as it was typed.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from app.schedules.spec import ScheduleError

FIELD = "text"
MAX_TEXT_CHARS = 500


class Kind(enum.StrEnum):
    """What a token is, as the tokenizer sees it (before the grammar gives it a meaning)."""

    DATE = "date"  # 2027-01-04
    CLOCK = "clock"  # 9:30, 21:00, 9:30pm, 9am, 9 am
    ORDINAL = "ordinal"  # 1st, 2nd, 23rd, 4th
    NUMBER = "number"  # 15
    WORD = "word"  # every, monday, de-by
    COMMA = "comma"


_KINDS = re.compile(r"""
    (?P<date>\d{4}-\d{1,2}-\d{1,2})(?![\w-])
  | (?P<clock>\d+:\d+(?:\s*[ap]\.?m\.?)?(?![\w.])|\d+\s*[ap]\.?m\.?(?![\w.]))
  | (?P<ordinal>\d+(?:st|nd|rd|th))(?![\w-])
  | (?P<number>\d+)(?![\w-])
  | (?P<word>[^\W\d_]+(?:-[^\W_]+)*)(?![\w])
  | (?P<comma>,)
""", re.VERBOSE | re.IGNORECASE)
_SPACE = re.compile(r"\s+")

WEEKDAYS = {  # name → cron day-of-week number
    "sunday": 0, "sun": 0, "monday": 1, "mon": 1, "tuesday": 2, "tue": 2, "tues": 2, "wednesday": 3, "wed": 3,
    "thursday": 4, "thu": 4, "thur": 4, "thurs": 4, "friday": 5, "fri": 5, "saturday": 6, "sat": 6,
}
DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
LAST = "last"


@dataclass(frozen=True)
class Token:
    """One token: its kind, its lower-cased ``value`` and where it was in the typed text."""

    kind: Kind
    value: str
    start: int
    end: int


def refuse(message: str) -> ScheduleError:
    """The error every refusal of the phrase raises (field ``text``)."""
    return ScheduleError(FIELD, message)


def tokenize(text: str) -> list[Token]:
    """Tokens of ``text``; raises ScheduleError naming the first run of text no token kind takes."""
    tokens: list[Token] = []
    at = 0
    while at < len(text):
        space = _SPACE.match(text, at)
        if space:
            at = space.end()
            continue
        match = _KINDS.match(text, at)
        if match is None or match.lastgroup is None:
            bad = re.match(r"\S+", text[at:])
            raise refuse(f'"{bad.group() if bad else text[at]}" is not understood')
        value = " ".join(match.group().lower().replace(".", "").split())
        tokens.append(Token(Kind(match.lastgroup), value, match.start(), match.end()))
        at = match.end()
    return tokens


def ordinal_of(token: Token | None) -> int | None:
    """1 for "first" or "1st", ... (None when the token is not an ordinal; "last" is not one here)."""
    if token is None:
        return None
    if token.kind is Kind.ORDINAL:
        return int(token.value[:-2])
    return ORDINAL_WORDS.get(token.value) if token.kind is Kind.WORD else None


def weekday_of(token: Token | None, *, plural: bool = False) -> int | None:
    """The cron day-of-week number of a day name ("monday", "mon"; "mondays" when ``plural``)."""
    if token is None or token.kind is not Kind.WORD:
        return None
    word = token.value
    if plural and word.endswith("s") and word[:-1] in WEEKDAYS and len(word) > 4:
        word = word[:-1]
    return WEEKDAYS.get(word)


class Cursor:
    """Reads tokens in order; every refusal quotes the typed text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.at = 0

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.at + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def is_word(self, *words: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.kind is Kind.WORD and token.value in words

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def accept(self, *words: str) -> Token | None:
        """The next token if it is one of ``words`` (taken), else None."""
        return self.take() if self.is_word(*words) else None

    def expect(self, what: str, *words: str) -> Token:
        """The next token, which must be one of ``words``; else a refusal saying ``what`` was expected."""
        if self.is_word(*words):
            return self.take()
        raise self.unexpected(what)

    def unexpected(self, what: str) -> ScheduleError:
        """A refusal at the current token: it is not understood, ``what`` was expected there."""
        token = self.peek()
        last = self.tokens[self.at - 1] if self.at else None
        after = f' after "{self.quote(last)}"' if last is not None else ""
        if token is None:
            return refuse(f"expected {what}{after}")
        return refuse(f'"{self.quote(token)}" is not understood; expected {what}{after}')

    def quote(self, first: Token, last: Token | None = None) -> str:
        """The typed text from ``first`` through ``last`` (default: ``first`` alone)."""
        end = (last or first).end
        return " ".join(self.text[first.start:end].split())

    def since(self, index: int) -> str:
        """The typed text of the tokens from ``index`` up to the cursor."""
        if index >= self.at:
            return ""
        return self.quote(self.tokens[index], self.tokens[self.at - 1])

    def separator(self) -> bool:
        """Take a list separator (",", "and", ", and"); True when one was there."""
        taken = False
        if self.peek() is not None and self.peek().kind is Kind.COMMA:
            self.take()
            taken = True
        if self.accept("and"):
            taken = True
        return taken

