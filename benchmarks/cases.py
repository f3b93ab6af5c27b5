"""Benchmark cases: regexes and choice sets, each with the strings whose token paths are timed.

Patterns stay inside the syntax all four engines read the same way (Python ``re``, Rust
``regex``, xgrammar's ECMAScript-like regexes): explicit ``[0-9]`` instead of ``\\d`` (which is
Unicode-aware in some of them), no lookaround, no lazy quantifiers, and no alternation where one
branch is a prefix of another (outlines-core resolves alternation leftmost-first).

>>> [c.name for c in select_cases("date")]
['iso_date']
>>> all(c.check() is None for c in CASES + JSON_CASES)
True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .anchors import Kind

__all__ = ["CASES", "JSON_CASES", "Case", "api_choices", "select_cases"]


@dataclass(frozen=True)
class Case:
    """One constraint and the target strings whose real-tokenizer paths are walked.

    ``kind`` is ``"regex"`` (``spec``: pattern), ``"choice"`` (``spec``: list of strings) or
    ``"json"`` (``spec``: JSON Schema dict).
    """

    name: str
    kind: Kind
    spec: Any
    targets: tuple[str, ...]
    note: str = ""

    def check(self) -> str | None:
        """None when every target is in the language (by Python's ``re``), else the problem.

        >>> Case("x", "regex", "[0-9]+", ("12", "a")).check()
        "target 'a' does not match"
        """
        for t in self.targets:
            if self.kind == "regex" and re.fullmatch(self.spec, t) is None:
                return f"target {t!r} does not match"
            if self.kind == "choice" and t not in self.spec:
                return f"target {t!r} is not a choice"
            if self.kind == "json" and not isinstance(json.loads(t), dict):
                return f"target {t!r} is not a JSON object"
        return None

    def summary(self) -> str:
        """A one-line description of the spec for tables."""
        if self.kind == "choice":
            return f"{len(self.spec)} choices"
        text = self.spec if self.kind == "regex" else json.dumps(self.spec)
        return text if len(text) <= 60 else text[:57] + "..."


def api_choices() -> list[str]:
    """200 API operation names sharing long prefixes ("get_user", "get_user_profile", ...).

    >>> ops = api_choices(); len(ops), len(set(ops)), ops[:3]
    (200, 200, ['get_user', 'get_users', 'get_user_profile'])
    """
    verbs = ["get", "set", "list", "delete", "update"]
    nouns = []
    for stem in ["user", "order", "invoice", "product", "account", "session", "payment", "report"]:
        nouns += [stem, stem + "s", stem + "_profile", stem + "_settings", stem + "_history"]
    return [f"{v}_{n}" for v in verbs for n in nouns]


_NUMBER_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "twentyone",
]
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

CASES: list[Case] = [
    Case(
        "email",
        "regex",
        r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*\.[a-zA-Z]{2,}",
        ("john.doe@example.com", "a_b+tag@mail.server.co.uk", "x@y.io"),
    ),
    Case(
        "iso_date",
        "regex",
        r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
        ("2024-01-31", "1999-12-01", "2000-02-29"),
    ),
    Case(
        "phone",
        "regex",
        r"(\+1 )?\(?[0-9]{3}\)?[ .-]?[0-9]{3}[.-][0-9]{4}",
        ("(555) 123-4567", "+1 555.867.5309", "212 555-0199"),
    ),
    Case(
        "words",
        "regex",
        r"[a-z]+( [a-z]+){0,20}",
        (
            "the quick brown fox jumps over the lazy dog",
            " ".join(_NUMBER_WORDS),
            "hello",
        ),
        note="bounded repeat of a loop",
    ),
    Case(
        "ab_suffix",
        "regex",
        r"(a|b)*a(a|b){20}",
        ("a" * 21, "abba" * 5 + "a" + "ab" * 10, "b" * 30 + "a" * 21),
        note="its minimal DFA has 2^21 states: lazy engines only",
    ),
    Case(
        "digits",
        "regex",
        r"[0-9]{1,1000}",
        ("7", "2024", "3141592653589793238462643383279502884197" * 10),
        note="large bounded repeat",
    ),
    Case(
        "json_ish",
        "regex",
        r'\{"name": "[a-zA-Z ]{1,30}", "age": [0-9]{1,3}, "tags": \[("[a-z]+"(, "[a-z]+")*)?\]\}',
        (
            '{"name": "Alice Smith", "age": 42, "tags": ["admin", "ops"]}',
            '{"name": "Bob", "age": 7, "tags": []}',
        ),
    ),
    Case(
        "uuid",
        "regex",
        _UUID,
        ("123e4567-e89b-12d3-a456-426614174000", "f47ac10b-58cc-4372-a567-0e02b2c3d479"),
    ),
    Case(
        "float",
        "regex",
        r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
        ("3.14159", "-0.5e10", "42", "6.02214076E23"),
    ),
    Case(
        "choice_small",
        "choice",
        ["yes", "no", "maybe"],
        ("yes", "maybe"),
    ),
    Case(
        "choice_200",
        "choice",
        api_choices(),
        ("get_user", "get_user_profile", "delete_payment_history"),
        note="200 choices with shared prefixes, some choices prefixes of others",
    ),
]

#: Smoke cases for the ``json`` kind (the JSON-schema benchmark brings its own corpus).
JSON_CASES: list[Case] = [
    Case(
        "json_person",
        "json",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer"},
                "email": {"type": "string"},
            },
            "required": ["name", "age", "email"],
            "additionalProperties": False,
        },
        (
            '{"name":"Alice","age":42,"email":"alice@example.com"}',
            '{"name":"Bob Jr.","age":7,"email":"bob@x.org"}',
        ),
    ),
]


def select_cases(substr: str | None = None, *, with_json: bool = False) -> list[Case]:
    """Cases whose name contains ``substr`` (any of comma-separated parts); all when None.

    >>> [c.name for c in select_cases("uuid,float")]
    ['uuid', 'float']
    """
    pool = CASES + (JSON_CASES if with_json else [])
    if not substr:
        return list(pool)
    parts = [p for p in substr.split(",") if p]
    return [c for c in pool if any(p in c.name for p in parts)]
