"""Languages of JSON Schema ``format`` values, as grammar IR over the *decoded* string.

:func:`format_expr` returns the strings of a format (characters before JSON escaping) or
``None`` for a format it does not know (the JSON Schema compiler warns). The reference is
what ``jsonschema``'s format checker of draft 2019-09/2020-12 accepts with its optional
libraries installed (``rfc3339-validator``, ``rfc3986-validator``, ``fqdn``, ``idna``,
``isoduration``, ``jsonpointer``, ``uri-template``): every string accepted here passes it
(soundness), and the deviations below are subsets that keep every realistic value.

- ``date``: ``YYYY-MM-DD``, years 0001-9999, exact days per month, 29 February only in
  Gregorian leap years. Exact.
- ``date-time``: ``date`` ``T`` ``hh:mm:ss[.frac](Z|+hh:mm|-hh:mm)``; ``t``/``z`` also in
  lower case, as the checker upper-cases. No leap second 60 (the checker refuses it).
  Exact except the checker's quirk of accepting one trailing newline.
- ``time``: the time part of ``date-time``. (A bare ``FormatChecker()`` uses draft 3's
  ``%H:%M:%S`` for ``time``; validate with the draft's ``FORMAT_CHECKER``.)
- ``duration``: ``P[nY][nM][nD][T[nH][nM][nS]]`` (at least one part, ``T`` only with a time
  part) or ``PnW``; digits, and a fraction on seconds only. The checker also takes signs,
  fractions elsewhere and exponent digits; those are left out.
- ``email``: dot-atom or simple quoted local part, ``@``, then dot-separated hostname labels
  or a bracketed IPv4 address. ``idn-email`` adds non-ASCII characters to both sides. (The
  checker only asks for an ``@``.)
- ``hostname``: ASCII labels of 1-63 letters, digits and inner hyphens, dot-separated, at
  most 253 characters (a trailing dot allowed beyond). Exact for ASCII (the checker also
  takes Unicode digits and one final newline, which are left out).
- ``idn-hostname``: the same ASCII labels less those with ``--`` in 3rd and 4th place
  (A-labels ``xn--`` are left out), plus labels with non-ASCII letters that IDNA 2008 allows
  unconditionally (PVALID, left-to-right, never changed by NFC, with lower-case ASCII
  letters, digits and hyphens), at most 12 characters per such label and 40 in all
  (so the punycode form stays within DNS limits). Non-ASCII labels need ``idna``
  installed when the expression is built; without it only ASCII names are accepted.
- ``ipv4``: dotted quad, no leading zeros. Exact.
- ``ipv6``: RFC 4291 text forms, optional embedded dotted quad, no zone id. Exact.
- ``uuid``: ``8-4-4-4-12`` hexadecimal digits, either case (the checker also takes extra
  hyphens after the fourth, which are left out).
- ``uri``, ``uri-reference``: the RFC 3986 grammar the checker uses (``rfc3986-validator``),
  with IP literals in the strict form above (the checker also takes IPv4 parts with leading
  zeros inside ``[...]``, and one final newline: both left out). ``iri``, ``iri-reference``: the same with RFC 3987's
  non-ASCII characters of the BMP, and only uncompressed IPv6 literals (both limits of
  ``rfc3987-syntax``, which jsonschema uses for IRIs when ``rfc3987`` is absent).
- ``uri-template``: RFC 6570 level 4 (literals, ``{op var,var:3,list*}``) less variable
  names that start with a ``%``-escape, which the checker refuses.
- ``json-pointer``: exact. ``relative-json-pointer``: exact, including the checker's quirks:
  a digit may not follow a ``0`` (``102`` is refused, ``10`` accepted) and digits are
  those of ``str.isdigit`` (``٣/a`` passes; ``²1`` makes the checker raise, left out).
- ``regex``: a regular subset of Python ``re`` syntax (see :func:`_regex_subset`): literals,
  escapes, ``.``, classes, groups nested up to 3 deep, alternation, quantifiers.
- ``color`` (draft 3): ``#rgb``, ``#rrggbb`` and the 17 CSS 2.1 colour names (the checker,
  ``webcolors``, takes CSS 3's 147 in any case).

Where a format is complemented, :func:`checker_superset` gives a language holding all
that the checker accepts, quirks included (see :data:`CHECKER_SUPERSETS`): every string
where the checker is not installed (``iri`` and ``iri-reference`` without ``rfc3987``).

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar
>>> a = Automaton(Grammar.single(format_expr("date")))
>>> [a.matches(s) for s in (b"2024-02-29", b"2023-02-29", b"1900-02-29", b"2000-02-29")]
[True, False, False, True]
"""

from __future__ import annotations

import re
import sys
import unicodedata
from array import array
from collections.abc import Callable

from .digit_ranges import DIGIT, NONZERO, uint_range
from .grammar import (
    ANY_CHAR,
    EMPTY,
    Expr,
    alt,
    chars,
    intersect,
    literal,
    optional,
    plus,
    repeat,
    seq,
    star,
)

__all__ = ["CHECKER_SUPERSETS", "FORMATS", "checker_superset", "format_expr"]


def _cls(spec: str, extra: tuple[tuple[int, int], ...] = ()) -> Expr:
    """A character class written like the inside of ``[...]``: ``a-zA-Z0-9_.-``."""
    ranges: list[tuple[int, int]] = list(extra)
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            ranges.append((ord(spec[i]), ord(spec[i])))
            i += 1
    return chars(ranges)


def _one_or_more_of(*items: Expr) -> Expr:
    """``a? b? c?`` in order with at least one present."""
    if len(items) == 1:
        return items[0]
    rest = [optional(i) for i in items[1:]]
    return alt(seq(items[0], *rest), _one_or_more_of(*items[1:]))


_HEX = _cls("0-9A-Fa-f")
_ALNUM = _cls("A-Za-z0-9")


def _digits(n: int) -> Expr:
    return repeat(DIGIT, n, n)


# --- dates and times -------------------------------------------------------------------


def _date() -> Expr:
    year = alt(
        seq(NONZERO, _digits(3)),
        seq(literal("0"), NONZERO, _digits(2)),
        seq(literal("00"), NONZERO, DIGIT),
        seq(literal("000"), NONZERO),
    )
    # Two-digit multiples of 4 other than 00: leap years are ..04-..96, and centuries
    # whose first two digits are such a multiple (years divisible by 400, 0000 excluded).
    by_four = alt(seq(literal("0"), _cls("48")), seq(_cls("2468"), _cls("048")), seq(
        _cls("13579"), _cls("26")))
    leap = alt(seq(_digits(2), by_four), seq(by_four, literal("00")))
    day_28 = alt(seq(literal("0"), NONZERO), seq(literal("1"), DIGIT), seq(literal("2"), _cls("0-8")))
    day_30 = alt(seq(literal("0"), NONZERO), seq(_cls("12"), DIGIT), literal("30"))
    day_31 = alt(day_30, literal("31"))
    month_31 = alt(seq(literal("0"), _cls("13578")), seq(literal("1"), _cls("02")))
    month_30 = alt(seq(literal("0"), _cls("469")), literal("11"))
    month_day = alt(
        seq(month_31, literal("-"), day_31),
        seq(month_30, literal("-"), day_30),
        seq(literal("02-"), day_28),
    )
    return alt(seq(year, literal("-"), month_day), seq(leap, literal("-02-29")))


def _time() -> Expr:
    hour = alt(seq(_cls("01"), DIGIT), seq(literal("2"), _cls("0-3")))
    minute = seq(_cls("0-5"), DIGIT)
    offset = alt(_cls("Zz"), seq(_cls("+-"), hour, literal(":"), minute))
    return seq(
        hour, literal(":"), minute, literal(":"), minute,
        optional(seq(literal("."), plus(DIGIT))), offset,
    )


def _date_time() -> Expr:
    return seq(_date(), _cls("Tt"), _time())


def _duration() -> Expr:
    number = plus(DIGIT)
    seconds = seq(number, optional(seq(literal("."), plus(DIGIT))), literal("S"))
    date_part = _one_or_more_of(*(seq(number, literal(c)) for c in "YMD"))
    time_part = seq(literal("T"), _one_or_more_of(
        seq(number, literal("H")), seq(number, literal("M")), seconds))
    return seq(literal("P"), alt(
        seq(date_part, optional(time_part)), time_part, seq(number, literal("W"))))


# --- internet names and addresses ------------------------------------------------------

_OCTET = alt(
    seq(literal("25"), _cls("0-5")),
    seq(literal("2"), _cls("0-4"), DIGIT),
    seq(literal("1"), DIGIT, DIGIT),
    seq(optional(NONZERO), DIGIT),
)
_IPV4 = seq(_OCTET, repeat(seq(literal("."), _OCTET), 3, 3))


_LS32 = alt(seq(repeat(_HEX, 1, 4), literal(":"), repeat(_HEX, 1, 4)), _IPV4)


# The checker's IPv4 inside an IPv6 literal of a URI (``rfc3986-validator``): octets may
# have leading zeros (``[01]?[0-9][0-9]?``).
_LOOSE_OCTET = alt(seq(literal("25"), _cls("0-5")), seq(literal("2"), _cls("0-4"), DIGIT),
                   seq(optional(_cls("01")), DIGIT, optional(DIGIT)))
_LOOSE_LS32 = alt(seq(repeat(_HEX, 1, 4), literal(":"), repeat(_HEX, 1, 4)),
                  seq(_LOOSE_OCTET, repeat(seq(literal("."), _LOOSE_OCTET), 3, 3)))


def _ipv6(ls32: Expr = _LS32) -> Expr:
    h16 = repeat(_HEX, 1, 4)
    h16c = seq(h16, literal(":"))
    gap = literal("::")

    def before(n: int) -> Expr:  # [ *n( h16 ":" ) h16 ]
        return optional(seq(repeat(h16c, 0, n), h16))

    return alt(
        seq(repeat(h16c, 6, 6), ls32),
        seq(gap, repeat(h16c, 5, 5), ls32),
        seq(before(0), gap, repeat(h16c, 4, 4), ls32),
        seq(before(1), gap, repeat(h16c, 3, 3), ls32),
        seq(before(2), gap, repeat(h16c, 2, 2), ls32),
        seq(before(3), gap, h16c, ls32),
        seq(before(4), gap, ls32),
        seq(before(5), gap, h16),
        seq(before(6), gap),
    )


def _ldh_label() -> Expr:
    return seq(_ALNUM, optional(seq(repeat(_cls("A-Za-z0-9-"), 0, 61), _ALNUM)))


def _dns_length(name: Expr, label_chars: Expr) -> Expr:
    """At most 253 characters, plus an optional trailing dot."""
    return intersect(name, seq(repeat(label_chars, 1, 253), optional(literal("."))))


def _hostname() -> Expr:
    label = _ldh_label()
    name = seq(label, star(seq(literal("."), label)), optional(literal(".")))
    return _dns_length(name, _cls("A-Za-z0-9.-"))


def _loose_hostname() -> Expr:
    """Every name ``fqdn`` accepts: its regex is case-insensitive over Unicode, so ``\\d``
    is any decimal digit and ``ı``, ``ſ`` and the Kelvin sign match ``i``, ``s`` and
    ``k``; ``$`` also matches before a final newline. Labels keep their shape, not the
    length bounds (this is a superset, for where the format is complemented)."""
    decimal = [(ord(c), ord(c)) for c in _decimal_digits()]
    letter = chars([(ord("A"), ord("Z")), (ord("a"), ord("z")), (0x131, 0x131),
                    (0x17F, 0x17F), (0x212A, 0x212A), *decimal])
    inner = alt(letter, literal("-"))
    label = seq(letter, optional(seq(star(inner), letter)))
    return seq(label, star(seq(literal("."), label)), optional(literal(".")),
               optional(literal("\n")))


def _idn_ascii_label() -> Expr:
    """LDH labels without ``--`` in 3rd and 4th position (IDNA's hyphen rule)."""
    ldh = _cls("A-Za-z0-9-")
    tail = alt(
        seq(_ALNUM, optional(seq(repeat(ldh, 0, 59), _ALNUM))),
        seq(literal("-"), _ALNUM, optional(seq(repeat(ldh, 0, 58), _ALNUM))),
    )
    return alt(_ALNUM, seq(_ALNUM, _ALNUM), seq(_ALNUM, ldh, tail))


_IDN_LABEL_CHARS = 12
_IDN_NAME_CHARS = 40


def _idn_letters() -> Expr | None:
    """Non-ASCII code points any IDNA 2008 label may hold anywhere: PVALID, bidi class L,
    not a mark, and in NFC whatever surrounds them (never the second half of a canonical
    pair, no Hangul vowel or final jamo, unchanged by NFC)."""
    try:
        from idna import idnadata
    except ImportError:  # pragma: no cover - idna comes with the dev extras
        return None
    decomposed: dict[int, str] = {}
    second_of_pair: set[int] = set()
    for cp in range(0x80, 0x30000):
        found = unicodedata.decomposition(chr(cp))
        if found:
            decomposed[cp] = found
            parts = found.split()
            if len(parts) == 2 and not parts[0].startswith("<"):
                second_of_pair.add(int(parts[1], 16))
    bidirectional, category = unicodedata.bidirectional, unicodedata.category
    ranges: list[tuple[int, int]] = []
    for packed in idnadata.codepoint_classes["PVALID"]:
        lo, hi = packed >> 32, (packed & 0xFFFFFFFF) - 1
        for cp in range(max(lo, 0x80), min(hi, 0x2FFFF) + 1):
            ch = chr(cp)
            if (
                bidirectional(ch) == "L"
                and category(ch)[0] != "M"
                and cp not in second_of_pair
                and not 0x1160 <= cp <= 0x11FF
                and (cp not in decomposed or unicodedata.normalize("NFC", ch) == ch)
                and unicodedata.combining(ch) == 0
            ):
                ranges.append((cp, cp))
    return chars(ranges) if ranges else None


def _idn_hostname() -> Expr:
    ascii_name = seq(
        _idn_ascii_label(), star(seq(literal("."), _idn_ascii_label())), optional(literal("."))
    )
    ascii_only = _dns_length(ascii_name, _cls("A-Za-z0-9.-"))
    letters = _idn_letters()
    if letters is None:
        return ascii_only
    lower = _cls("a-z0-9")
    inner = alt(lower, letters, literal("-"))
    first_last = alt(lower, letters)
    # A label with a non-ASCII letter: IDNA checks it as is (no lower-casing), forbids
    # hyphens first, last and in 3rd+4th place; length is bounded so punycode fits.
    unicode_label = intersect(
        seq(first_last, optional(seq(repeat(inner, 0, _IDN_LABEL_CHARS - 2), first_last))),
        seq(star(inner), letters, star(inner)),
        alt(repeat(inner, 0, 3), seq(inner, inner, first_last, star(inner)),
            seq(inner, inner, literal("-"), first_last, star(inner))),
    )
    label = alt(_idn_ascii_label(), unicode_label)
    name = seq(label, star(seq(literal("."), label)), optional(literal(".")))
    with_unicode = intersect(
        name,
        seq(star(ANY_CHAR), letters, star(ANY_CHAR)),
        repeat(ANY_CHAR, 1, _IDN_NAME_CHARS),
    )
    return alt(ascii_only, with_unicode)


def _email(idn: bool) -> Expr:
    non_ascii = ((0xA1, 0x10FFFF),) if idn else ()
    atom = plus(_cls("A-Za-z0-9!#$%&'*+/=?^_`{|}~-", non_ascii))
    dot_atom = seq(atom, star(seq(literal("."), atom)))
    quoted = seq(literal('"'), star(alt(
        _cls(" !#-[]-~", non_ascii), seq(literal("\\"), _cls(" -~")))), literal('"'))
    label_chars = _cls("A-Za-z0-9", non_ascii)
    label = seq(label_chars, optional(seq(star(alt(label_chars, literal("-"))), label_chars)))
    domain = alt(
        seq(label, star(seq(literal("."), label))),
        seq(literal("["), _IPV4, literal("]")),
    )
    return seq(alt(dot_atom, quoted), literal("@"), domain)


# --- URIs and friends ------------------------------------------------------------------

# RFC 3987's ucschar and iprivate, within the BMP only: rfc3987-syntax (one of the two
# libraries jsonschema may check IRIs with) knows no others.
_UCSCHAR = ((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF))
_IPRIVATE = ((0xE000, 0xF8FF),)
_PCT = seq(literal("%"), _HEX, _HEX)


def _uri(reference: bool, iri: bool, loose: bool = False) -> Expr:
    """The grammar of ``rfc3986-validator`` (RFC 3986), or RFC 3987's when ``iri``;
    ``loose``: all the validator accepts (leading zeros in an IPv6 literal's IPv4 part, a
    final newline before its ``$``), for where the format is complemented."""
    ucs = _UCSCHAR if iri else ()
    sub_unreserved = "-a-zA-Z0-9_.~!$&'()*+,;="
    reg_name = star(alt(_cls(sub_unreserved, ucs), _PCT))
    userinfo = star(alt(_cls(sub_unreserved + ":", ucs), _PCT))
    ip_future = seq(literal("v"), plus(_HEX), literal("."), plus(_cls(sub_unreserved + ":")))
    # rfc3987-syntax only parses uncompressed IPv6 addresses, so IRIs keep only those.
    ipv6 = (seq(repeat(seq(repeat(_HEX, 1, 4), literal(":")), 6, 6), _LS32) if iri
            else _ipv6(_LOOSE_LS32 if loose else _LS32))
    host = alt(seq(literal("["), alt(ipv6, ip_future), literal("]")), reg_name)
    authority = seq(optional(seq(userinfo, literal("@"))), host,
                    optional(seq(literal(":"), star(DIGIT))))
    pchar = alt(_cls(sub_unreserved + ":@", ucs), _PCT)
    segments = star(seq(literal("/"), star(pchar)))
    query_chars = alt(_cls(sub_unreserved + ":@/?", ucs + (_IPRIVATE if iri else ())), _PCT)
    query = optional(seq(literal("?"), star(query_chars)))
    fragment_chars = alt(_cls(sub_unreserved + ":@/?", ucs), _PCT)
    fragment = optional(seq(literal("#"), star(fragment_chars)))
    scheme = seq(_cls("a-zA-Z"), star(_cls("a-zA-Z0-9+.-")))
    common = (
        seq(literal("//"), authority, segments),
        seq(literal("/"), optional(seq(plus(pchar), segments))),
    )
    hier = alt(*common, seq(plus(pchar), segments), EMPTY)
    uri = seq(scheme, literal(":"), hier, query, fragment)
    if reference:
        no_colon = alt(_cls(sub_unreserved + "@", ucs), _PCT)
        relative = alt(*common, seq(plus(no_colon), segments), EMPTY)
        uri = alt(uri, seq(relative, query, fragment))
    return seq(uri, optional(literal("\n"))) if loose else uri


def _uri_template() -> Expr:
    literal_chars = alt(
        _cls("!#$&(-;=?-[]_a-z~", _UCSCHAR + _IPRIVATE), _PCT,
    )
    var_char = alt(_cls("A-Za-z0-9_"), _PCT)
    name = seq(_cls("A-Za-z0-9_"), star(seq(optional(literal(".")), var_char)))
    modifier = alt(seq(literal(":"), NONZERO, repeat(DIGIT, 0, 2)), literal("*"))
    varspec = seq(name, optional(modifier))
    expression = seq(
        literal("{"), optional(_cls("+#./;?&")), varspec, star(seq(literal(","), varspec)),
        literal("}"),
    )
    return star(alt(literal_chars, expression))


_POINTER = star(seq(literal("/"), star(alt(chars([(ord("/"), ord("/")), (ord("~"), ord("~"))],
                                                    negate=True),
                                              seq(literal("~"), _cls("01"))))))


def _every_code_point() -> str:
    """Every Unicode scalar value, in order, as one string."""
    code_points = array("I", range(0xD800)) + array("I", range(0xE000, 0x110000))
    return code_points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else
                                        "utf-32-be")


def _decimal_digits() -> list[str]:
    """What Python's Unicode ``\\d`` matches: exactly the decimal digits of every script."""
    return re.findall(r"\d", _every_code_point())


def _relative_pointer() -> Expr:
    # The checker reads its number with str.isdigit (any script's digits, superscripts...)
    # and refuses a digit after one whose int() is 0; int() of a non-decimal digit raises,
    # so every digit but the last is a non-zero decimal digit of some script.
    decimal = _decimal_digits()
    other = [c for c in re.findall(r"[^\W\d_]", _every_code_point())
             if c.isdigit()]  # ² and kin
    all_digits = [(ord(c), ord(c)) for c in decimal + other]
    nonzero = [(ord(c), ord(c)) for c in decimal if unicodedata.decimal(c) != 0]
    number = seq(star(chars(nonzero)), chars(all_digits))
    return seq(number, alt(literal("#"), _POINTER))


def _uuid() -> Expr:
    return seq(*(item for n in (8, 4, 4, 4) for item in (repeat(_HEX, n, n), literal("-"))),
               repeat(_HEX, 12, 12))


_HEX_COLOR = seq(literal("#"), repeat(_HEX, 3, 3), optional(repeat(_HEX, 3, 3)))


def _color() -> Expr:
    names = ["aqua", "black", "blue", "fuchsia", "gray", "green", "lime", "maroon", "navy", "olive", "orange", "purple", "red", "silver", "teal", "white", "yellow"]
    return alt(_HEX_COLOR, *(literal(n) for n in names))


# CSS Color Module Level 3's 147 keywords, which the draft-3 checker (webcolors) looks up.
_CSS3_COLOR_NAMES = """aliceblue antiquewhite aqua aquamarine azure beige bisque black
blanchedalmond blue blueviolet brown burlywood cadetblue chartreuse chocolate coral
cornflowerblue cornsilk crimson cyan darkblue darkcyan darkgoldenrod darkgray darkgreen
darkgrey darkkhaki darkmagenta darkolivegreen darkorange darkorchid darkred darksalmon
darkseagreen darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink
deepskyblue dimgray dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro
ghostwhite gold goldenrod gray green greenyellow grey honeydew hotpink indianred indigo
ivory khaki lavender lavenderblush lawngreen lemonchiffon lightblue lightcoral lightcyan
lightgoldenrodyellow lightgray lightgreen lightgrey lightpink lightsalmon lightseagreen
lightskyblue lightslategray lightslategrey lightsteelblue lightyellow lime limegreen linen
magenta maroon mediumaquamarine mediumblue mediumorchid mediumpurple mediumseagreen
mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue mintcream
mistyrose moccasin navajowhite navy oldlace olive olivedrab orange orangered orchid
palegoldenrod palegreen paleturquoise palevioletred papayawhip peachpuff peru pink plum
powderblue purple red rosybrown royalblue saddlebrown salmon sandybrown seagreen seashell
sienna silver skyblue slateblue slategray slategrey snow springgreen steelblue tan teal
thistle tomato turquoise violet wheat white whitesmoke yellow yellowgreen""".split()  # noqa: SIM905


def _checker_color() -> Expr:
    # The checker looks a name up after str.lower(), which also maps the Kelvin sign to
    # "k", and matches a hexadecimal colour with "$" (a final newline passes).
    def letter(c: str) -> Expr:
        return _cls(c + c.upper() + ("\u212a" if c == "k" else ""))

    names = alt(*(seq(*(letter(c) for c in name)) for name in _CSS3_COLOR_NAMES))
    return alt(names, seq(_HEX_COLOR, optional(literal("\n"))))


def _regex_subset() -> Expr:
    """Regexes built from pieces Python's ``re`` always compiles: literal characters
    (not metacharacters; control characters too, so that a pattern's final-newline
    reading stays inside), escaped punctuation, ``\\d\\w\\s\\D\\W\\S``, ``.``, simple
    classes ``[...]`` of literals and ascending ``a-z`` style ranges of letters or digits,
    groups ``(...)``/``(?:...)`` nested up to 3 deep with ``|``, one quantifier
    (``* + ? {n} {n,} {n,m}``, counts below 10000, ``n <= m`` and ``n < 100`` in ``{n,m}``,
    with an optional lazy ``?``) after any atom, and the anchors
    ``^``/``$`` anywhere (unquantified)."""
    meta = "\\.^$*+?{}[]()|"
    plain = chars([(ord(c), ord(c)) for c in meta], negate=True)
    escape = seq(literal("\\"), _cls("dwsDWSntrf" + meta + "/-"))
    class_item = alt(
        chars([(ord(c), ord(c)) for c in "\\]^-[&~|"], negate=True),
        seq(literal("\\"), _cls("dwsDWS" + "\\]^-[.")),
        seq(literal("a-"), _cls("b-z")), seq(literal("A-"), _cls("B-Z")),
        seq(literal("0-"), _cls("1-9")),
    )
    cls = seq(literal("["), optional(literal("^")), plus(class_item), literal("]"))
    count = alt(literal("0"), seq(NONZERO, repeat(DIGIT, 0, 3)))
    # {n,m} needs n <= m (re refuses "a{2,1}"): n below 100, then m in [n, 9999].
    bounded = alt(*(seq(literal(f"{n},"), uint_range(n, 9999)) for n in range(100)))
    quant = seq(alt(_cls("*+?"),
                    seq(literal("{"), alt(count, seq(count, literal(",")), bounded),
                        literal("}"))),
                optional(literal("?")))
    atom: Expr = alt(plain, escape, literal("."), cls)
    body: Expr = EMPTY
    for _ in range(4):
        piece = alt(seq(atom, optional(quant)), _cls("^$"))  # anchors take no quantifier
        body = seq(star(piece), star(seq(literal("|"), star(piece))))
        group = seq(literal("("), optional(literal("?:")), body, literal(")"))
        atom = alt(plain, escape, literal("."), cls, group)
    return body


FORMATS: dict[str, Callable[[], Expr]] = {
    "date": _date,
    "date-time": _date_time,
    "time": _time,
    "duration": _duration,
    "email": lambda: _email(False),
    "idn-email": lambda: _email(True),
    "hostname": _hostname,
    "idn-hostname": _idn_hostname,
    "ipv4": lambda: _IPV4,
    "ipv6": _ipv6,
    "uuid": _uuid,
    "uri": lambda: _uri(False, False),
    "uri-reference": lambda: _uri(True, False),
    "iri": lambda: _uri(False, True),
    "iri-reference": lambda: _uri(True, True),
    "uri-template": _uri_template,
    "json-pointer": lambda: _POINTER,
    "relative-json-pointer": _relative_pointer,
    "regex": _regex_subset,
    "color": _color,
}
"""Known formats and their builders (built on first use, then cached)."""

_CACHE: dict[str, Expr] = {}


def _email_rule() -> Expr:
    anything = star(ANY_CHAR)
    return seq(anything, literal("@"), anything)


def _loose_uuid() -> Expr:
    # The checker asks UUID() to parse the string (which also takes braces, "urn:uuid:",
    # any hyphens, signs and underscores) and for hyphens at positions 8, 13, 18 and 23.
    any_n = [repeat(ANY_CHAR, n, n) for n in (8, 4, 4, 4)]
    return seq(*(item for part in any_n for item in (part, literal("-"))), star(ANY_CHAR))


def _loose_duration() -> Expr:
    # isoduration reads an optional sign and "P", and the checker asks for a designator last.
    return seq(optional(_cls("+-")), literal("P"), star(ANY_CHAR), _cls("DMYWHS"))


_EXACT = ("date", "ipv4", "ipv6", "json-pointer", "relative-json-pointer")

CHECKER_SUPERSETS: dict[str, Callable[[], Expr]] = {
    **{name: FORMATS[name] for name in _EXACT},
    # The checker upper-cases and reads with "$", which also matches before a final "\n".
    "date-time": lambda: seq(_date_time(), optional(literal("\n"))),
    "time": lambda: seq(_time(), optional(literal("\n"))),
    "email": _email_rule,
    "idn-email": _email_rule,
    "hostname": _loose_hostname,
    "uuid": _loose_uuid,
    "duration": _loose_duration,
    "color": _checker_color,
    "uri": lambda: _uri(False, False, loose=True),
    "uri-reference": lambda: _uri(True, False, loose=True),
}
"""Per known format, a language holding *every* string ``jsonschema``'s checker accepts
(exact for the formats in ``_EXACT`` and for ``color``), for where a format's language is
complemented (``not``, an ``if``, a ``oneOf``'s other branches): the complement of a subset
would let through strings that have the format. Formats missing here have no such language
yet (``idn-hostname``, ``iri``, ``iri-reference``, ``uri-template``, ``regex``)."""

_SUPERSET_CACHE: dict[str, Expr] = {}


def _checked(name: str) -> bool:
    """Whether the reference checker checks ``name`` here: draft 3's for ``color``,
    2020-12's for the others, as installed (``iri`` needs ``rfc3987``, say)."""
    from jsonschema import Draft3Validator, Draft202012Validator

    reference = Draft3Validator if name == "color" else Draft202012Validator
    return name in reference.FORMAT_CHECKER.checkers


def checker_superset(name: str) -> Expr | None:
    """A language containing every string that passes the checker of known format
    ``name`` (see :data:`CHECKER_SUPERSETS`), or ``None`` where none is built. Every
    string where the checker is not installed (``iri`` without ``rfc3987``): it passes
    them all.

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(checker_superset("date-time")))
    >>> a.matches(b"2024-02-29T12:00:00Z"), a.matches(b"2024-02-29T12:00:00Z\\n")
    (True, True)
    >>> checker_superset("regex") is None
    True
    """
    if name in _EXACT:
        return format_expr(name)  # the same language, built once
    if name in FORMATS and not _checked(name):
        return _EVERY_STRING
    return _built(name, CHECKER_SUPERSETS, _SUPERSET_CACHE)


_EVERY_STRING = star(ANY_CHAR)


def format_expr(name: str) -> Expr | None:
    """The language of format ``name`` (decoded string values), or ``None`` if unknown.

    Expressions are built once and shared; see the module docstring for each format's
    exact policy.

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(format_expr("ipv4")))
    >>> a.matches(b"192.168.0.1"), a.matches(b"192.168.0.01"), format_expr("no-such") is None
    (True, False, True)
    """
    return _built(name, FORMATS, _CACHE)


def _built(name: str, builders: dict[str, Callable[[], Expr]],
           cache: dict[str, Expr]) -> Expr | None:
    """``builders[name]()``, built on first use and kept in ``cache``."""
    found = cache.get(name)
    if found is None:
        builder = builders.get(name)
        if builder is None:
            return None
        found = cache[name] = builder()
    return found
