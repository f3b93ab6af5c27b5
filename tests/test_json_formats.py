"""Formats: every accepted string passes jsonschema's checker; realistic values pass."""

from __future__ import annotations

import random
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft3Validator, Draft202012Validator

from constrain.automaton import Automaton
from constrain.grammar import Grammar
from constrain.json_formats import CHECKER_SUPERSETS, FORMATS, checker_superset, format_expr

CHECKER = Draft202012Validator.FORMAT_CHECKER


def conforms(text: str, name: str) -> bool:
    checker = Draft3Validator.FORMAT_CHECKER if name == "color" else CHECKER
    try:
        return checker.conforms(text, name)
    except ValueError:  # relative-json-pointer's int() of a superscript digit
        return False


@cache
def automaton(name: str) -> Automaton:
    expr = format_expr(name)
    assert expr is not None
    return Automaton(Grammar.single(expr))


def matches(name: str, text: str) -> bool:
    return automaton(name).matches(text.encode())


VALID = {
    "date": ["2024-02-29", "2000-02-29", "1999-12-31", "0001-01-01", "2023-04-30"],
    "date-time": ["2024-01-15T10:30:00Z", "2024-01-15T10:30:00.123+05:30",
                  "1985-04-12t23:20:50.52z", "2019-10-12T07:20:50.52-04:00"],
    "time": ["23:59:59Z", "08:30:00+01:00", "00:00:00.000001-12:00"],
    "duration": ["P1Y", "P3Y6M4DT12H30M5S", "PT36H", "P4W", "PT0.5S", "P1D", "PT1M"],
    "email": ["john.doe@example.com", "a+tag@sub.example.co.uk", "x@localhost",
              '"quoted name"@example.org', "user@[192.168.0.1]"],
    "idn-email": ["jöhn@exämple.de", "用户@例子.中国", "plain@example.com"],
    "hostname": ["example.com", "a-b.c-d.example", "localhost", "xn--bcher-kva.de",
                 "example.com.", "123.example", "A" * 63 + ".com"],
    "idn-hostname": ["example.com", "münchen.de", "例え.jp", "пример.рф", "bücher.example"],
    "ipv4": ["0.0.0.0", "192.168.1.1", "255.255.255.255", "10.0.0.254"],
    "ipv6": ["::", "::1", "2001:db8::8a2e:370:7334", "fe80::1:2:3:4",
             "1:2:3:4:5:6:7:8", "::ffff:192.168.0.1", "1::", "1:2:3:4:5:6:7::"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000",
             "ABCDEF01-2345-6789-ABCD-EF0123456789"],
    "uri": ["https://example.com/path?q=1#frag", "mailto:user@example.com", "urn:isbn:123",
            "http://[::1]:8080/", "ftp://user:pw@host:21/a/b", "file:///etc/hosts"],
    "uri-reference": ["/relative/path", "../up", "?q=1", "#frag", "", "https://x.y/z"],
    "iri": ["http://例え.jp/パス?q=値#片", "https://example.com/"],
    "iri-reference": ["/パス", "#片", "https://example.com/"],
    "uri-template": ["/users/{id}", "https://api.x.com{/ver}/items{?q,limit}",
                     "{+path}/here", "{var:3}", "{list*}", "/literal"],
    "json-pointer": ["", "/", "/a/b", "/a~0b/c~1d", "/0/items"],
    "relative-json-pointer": ["0", "1/a", "10#", "2/b/0", "120", "٣/a"],
    "regex": ["^[a-z]+$", r"\d{3}-\d{4}", "(ab|cd)*?", "[A-Z][a-z0-9_]*", "a.b", "",
              "^[a-zA-Z0-9_]{3,16}$", "a{0,0}", "(a{1,2}|b){3,9999}?"],
    "color": ["#fff", "#A0B1C2", "red", "navy"],
}

INVALID = {
    "date": ["2023-02-29", "1900-02-29", "2024-04-31", "2024-13-01", "0000-01-01",
             "2024-1-01", "2024-01-01T00:00:00Z"],
    "date-time": ["2024-01-15 10:30:00Z", "2024-01-15T24:00:00Z", "2024-01-15T10:30:60Z",
                  "2024-01-15T10:30:00", "2024-02-30T10:30:00Z"],
    "time": ["23:59:59", "24:00:00Z", "12:00Z"],
    "duration": ["P", "PT", "P1YT", "1Y", "P1W2D", "PT1H2"],
    "email": ["no-at-sign", "a@", "@b.com", "a@@b.com", "a b@c.com"],
    "hostname": ["-bad.com", "bad-.com", "a..b", "a_b.com", "A" * 64 + ".com", ""],
    "idn-hostname": ["ab--cd.com", "München.de", "a_b.com", "-x.com"],
    "ipv4": ["256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1", "1.1.1.-1"],
    "ipv6": [":::", "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "::1%eth0", "1::2:3:4:5:6:7:8"],
    "uuid": ["123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"],
    "uri": ["no scheme", "/relative", "http://exa mple.com", "1http://x"],
    "uri-template": ["{}", "{=x}", "{var", "a}b", "{%41}", "{x:0}"],
    "json-pointer": ["a", "/a~2", "/~"],
    "relative-json-pointer": ["", "01", "102", "-1", "1a", "#"],
    "regex": ["(", "[", "a{2,1}", "*a", "a**", "a{99,98}", "a{3,16"],
}


@pytest.mark.parametrize(
    ("name", "text"), [(n, t) for n, ts in VALID.items() for t in ts],
    ids=[f"{n}:{t!r}" for n, ts in VALID.items() for t in ts],
)
def test_realistic_values_are_accepted(name: str, text: str) -> None:
    assert conforms(text, name), "bad test case: the checker refuses it"
    assert matches(name, text)


@pytest.mark.parametrize(
    ("name", "text"), [(n, t) for n, ts in INVALID.items() for t in ts],
    ids=[f"{n}:{t!r}" for n, ts in INVALID.items() for t in ts],
)
def test_invalid_values_are_rejected(name: str, text: str) -> None:
    assert not matches(name, text)


def test_unknown_format_is_none() -> None:
    assert format_expr("no-such-format") is None
    assert format_expr("date") is format_expr("date")  # built once


def _walk(a: Automaton, rng: random.Random, stop: float, limit: int = 200) -> str:
    """A random member of the automaton's language (mostly ASCII steps)."""
    state, out = a.start, bytearray()
    while True:
        if a.is_accepting(state) and (rng.random() < stop or len(out) > limit):
            return out.decode()
        row = a.row(state)
        live = np.flatnonzero(row != a.DEAD)
        if not len(live):
            assert a.is_accepting(state), "dead end"
            return out.decode()
        ascii_live = live[live < 128]
        pool = ascii_live if len(ascii_live) and rng.random() < 0.85 else live
        byte = int(rng.choice(pool))
        out.append(byte)
        state = int(row[byte])


# iri/iri-reference are unchecked unless rfc3987(-syntax) is installed; soundness against
# rfc3987-syntax was checked by hand (it takes ~0.1 s a string).
CHECKED = [n for n in FORMATS if n not in ("iri", "iri-reference")]


@pytest.mark.parametrize("name", CHECKED)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), stop=st.sampled_from([0.02, 0.1, 0.4]))
def test_every_accepted_string_passes_the_checker(name: str, seed: int, stop: float) -> None:
    rng = random.Random(seed)
    for _ in range(10):
        text = _walk(automaton(name), rng, stop)
        assert conforms(text, name), text


# Formats that are exact for ASCII input: membership equals the checker's verdict on
# strings over the format's own alphabet (no trailing newline, which only re's $ allows).
EXACT_ALPHABETS = {
    "date": "0123456789-",
    "date-time": "0129-:T.Zz+5",
    "time": "01235:.Z+-",
    "ipv4": "0125.",
    "ipv6": "0aF:.12",
    "hostname": "aZ09-.",
    "json-pointer": "/~01a",
    "relative-json-pointer": "0123#/~a٠٣²",
    "uri": "ab:/?#@[]%1.v-",
    "uri-reference": "ab:/?#@[]%1.v-",
}


@pytest.mark.parametrize("name", sorted(EXACT_ALPHABETS))
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_exact_formats_agree_with_the_checker(name: str, data: st.DataObject) -> None:
    alphabet = EXACT_ALPHABETS[name]
    valid = VALID.get(name, [""])
    base = data.draw(st.sampled_from(valid))
    # Mutate a valid value: realistic near-misses, not just random soup.
    chars = list(base)
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(0, len(chars)))
        action = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "insert" or not chars:
            chars.insert(i, data.draw(st.sampled_from(alphabet)))
        elif action == "delete":
            del chars[min(i, len(chars) - 1)]
        else:
            chars[min(i, len(chars) - 1)] = data.draw(st.sampled_from(alphabet))
    text = "".join(chars)
    assert matches(name, text) == conforms(text, name), text


@settings(max_examples=200, deadline=None)
@given(year=st.integers(1, 9999), month=st.integers(1, 12), day=st.integers(1, 31))
def test_dates_are_exact(year: int, month: int, day: int) -> None:
    text = f"{year:04d}-{month:02d}-{day:02d}"
    assert matches("date", text) == conforms(text, "date")
    stamp = f"{text}T12:00:00Z"
    assert matches("date-time", stamp) == conforms(stamp, "date-time")


@settings(max_examples=100, deadline=None)
@given(address=st.ip_addresses())
def test_ip_addresses_round_trip(address: object) -> None:
    text = str(address)
    name = "ipv4" if "." in text and ":" not in text else "ipv6"
    assert matches(name, text)


@settings(max_examples=60, deadline=None)
@given(value=st.uuids())
def test_uuids(value: object) -> None:
    assert matches("uuid", str(value)) and matches("uuid", str(value).upper())


# --- languages for where a format is complemented ---------------------------------------

@cache
def superset_automaton(name: str) -> Automaton:
    expr = checker_superset(name)
    assert expr is not None
    return Automaton(Grammar.single(expr))


# The characters the checkers read loosely: a final newline (re's "$"), other scripts'
# digits and the letters Unicode case-folds to ASCII (fqdn), braces, underscores and signs
# (UUID()), leading zeros in IPv4 parts (rfc3986-validator's IPv6 literals).
_LOOSE = "\n٣０ıſ\u212a{}_+:-0.z"
SUPERSET_ALPHABETS = {name: EXACT_ALPHABETS.get(name, "") + _LOOSE
                      for name in CHECKER_SUPERSETS}
SUPERSET_ALPHABETS["uuid"] = "0aF-" + _LOOSE
SUPERSET_ALPHABETS["duration"] = "PTYMDWHS1.,e" + _LOOSE
SUPERSET_ALPHABETS["email"] = SUPERSET_ALPHABETS["idn-email"] = "@a. " + _LOOSE


@pytest.mark.parametrize("name", sorted(CHECKER_SUPERSETS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_checker_supersets_hold_every_string_the_checker_accepts(
        name: str, data: st.DataObject) -> None:
    """Near-misses of valid values, and the valid values' own spellings with a final
    newline or a looser character: whatever the checker accepts, the superset holds."""
    alphabet = SUPERSET_ALPHABETS[name]
    chars = list(data.draw(st.sampled_from(VALID[name])))
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(0, len(chars)))
        if data.draw(st.booleans()) or not chars:
            chars.insert(i, data.draw(st.sampled_from(alphabet)))
        else:
            chars[min(i, len(chars) - 1)] = data.draw(st.sampled_from(alphabet))
    text = "".join(chars)
    if conforms(text, name):
        assert superset_automaton(name).matches(text.encode()), text


@pytest.mark.parametrize(("name", "text"), [
    ("date-time", "2024-01-15T10:30:00Z\n"), ("time", "23:59:59z\n"),
    ("hostname", "example.com\n"), ("hostname", "٣.example"), ("hostname", "\u212aey.ſite"),
    ("uri", "http://[::ffff:01.002.3.4]/"), ("uri-reference", "/a\n"),
    ("uuid", "{12345678-1234-1234-1234-123456789012}"[1:-1]),
    ("uuid", "12345678-1234-1234-1234-1234567890_1"),
    ("duration", "-P1.5D"), ("duration", "P1,5DT1e1S"),
    ("color", "#fff\n"), ("color", "AliceBlue"), ("color", "dar\u212akhaki"),
])
def test_checker_supersets_take_the_checkers_quirks(name: str, text: str) -> None:
    assert conforms(text, name), "bad test case: the checker refuses it"
    assert superset_automaton(name).matches(text.encode())
    assert not matches(name, text) or name == "uuid"


@pytest.mark.parametrize(("name", "text"), [
    (n, t) for n in CHECKER_SUPERSETS for t in INVALID.get(n, [])
    # hostname, uuid and duration drop length bounds, hex digits and what comes between
    # "P" and the last designator; email's checker asks for an "@"
    if n not in ("hostname", "uuid", "duration", "email", "idn-email")
])
def test_checker_supersets_still_refuse_what_is_far_from_the_format(name: str, text: str) -> None:
    assert not superset_automaton(name).matches(text.encode())


def test_formats_without_a_superset_are_none() -> None:
    assert checker_superset("regex") is None and checker_superset("uri-template") is None
    assert checker_superset("date") is format_expr("date")  # exact: the same language


def test_a_format_whose_checker_is_not_installed_has_every_string_for_superset() -> None:
    """Without ``rfc3987`` the checker passes every string as an IRI, so that is the
    language to complement; with it, no superset is built yet."""
    superset = checker_superset("iri")
    if "iri" in CHECKER.checkers:
        assert superset is None
    else:
        assert superset is not None
        a = Automaton(Grammar.single(superset))
        assert all(a.matches(t.encode()) for t in ("", "not an iri", "http://é.example/"))
