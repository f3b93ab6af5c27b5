"""JSON text pieces shared by the JSON Schema compiler: whitespace, punctuation, universes.

A :class:`JsonSyntax` fixes the *whitespace policy* (what may appear in each gap between
JSON tokens) and the string *escape policy* (:mod:`constrain.json_strings`); every language
the compiler builds uses the same one, so languages of different sub-schemas can be
intersected and complemented as plain text.

Gaps are the places inside a container where JSON allows whitespace: after ``{``/``[``,
before ``}``/``]``, around ``:`` and ``,``. Nothing is allowed before or after the whole
document (a model gains nothing there, and trailing whitespace would keep it from ending).

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar
>>> syn = JsonSyntax(whitespace_gap(max_whitespace=2))
>>> a = Automaton(Grammar(syn.universe_rules(), "json.value"))
>>> [a.matches(s) for s in (b'{"a": [1, 2.5e3, null]}', b'[ ]', b'[   1]', b' 1')]
[True, True, False, False]
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from .grammar import (
    EMPTY,
    NOTHING,
    Expr,
    RuleLibrary,
    alt,
    chars,
    held,
    intersect,
    literal,
    optional,
    prefix_tree,
    ref,
    repeat,
    seq,
    star,
)
from .json_numbers import JSON_NUMBER
from .json_strings import EscapePolicy, StringEncoder

__all__ = ["ARRAY_RULE", "OBJECT_RULE", "VALUE_RULE", "WS_CHAR", "JsonSyntax", "whitespace_gap"]

WS_CHAR = chars([(0x20, 0x20), (0x09, 0x0A), (0x0D, 0x0D)])
"""One JSON whitespace character: space, tab, line feed, carriage return."""

_QUOTE = literal('"')
_CLOSING = -1  # a key's end, in the tries of keyed
JSON_NULL = literal("null")
JSON_TRUE = literal("true")
JSON_FALSE = literal("false")
VALUE_RULE = "json.value"
ARRAY_RULE = "json.array"
OBJECT_RULE = "json.object"


def whitespace_gap(max_whitespace: int | None = None, pattern: Expr | None = None) -> Expr:
    """The language of one gap: at most ``max_whitespace`` JSON whitespace characters, or
    the strings of ``pattern`` that are JSON whitespace (``max_whitespace=0``: none).

    The same node for the same bound, so that syntaxes built on it are shared."""
    if pattern is not None:
        return intersect(pattern, star(WS_CHAR))
    return _bounded_gap(max_whitespace)


@lru_cache(maxsize=64)
def _bounded_gap(max_whitespace: int | None) -> Expr:
    if max_whitespace == 0:
        return EMPTY
    return repeat(WS_CHAR, 0, max_whitespace)


class _Shared(NamedTuple):
    gap: Expr  # held: the cache is keyed by its id
    comma: Expr
    colon: Expr
    library: RuleLibrary


# Per (gap node, escape policy): the pieces every compilation with that syntax builds the
# same way, as the same nodes, so that automata convert them once (see RuleLibrary).
_shared: OrderedDict[tuple[int, str], _Shared] = OrderedDict()
_SHARED_SYNTAXES = 32
_shared_lock = threading.Lock()


class JsonSyntax:
    """Punctuation with the gap language in place, and the unconstrained JSON universes.

    Syntaxes with the same gap node and escape policy share their punctuation and their
    :attr:`library` (the universe rules, and the characters keys are spelt with)."""

    def __init__(self, gap: Expr, escapes: EscapePolicy = "all") -> None:
        self.gap = gap
        self.strings = StringEncoder(escapes)
        self.null = JSON_NULL
        self.true = JSON_TRUE
        self.false = JSON_FALSE
        self.number = JSON_NUMBER
        self.string = self.strings.any_string
        self._key_runs: dict[tuple[int, ...], Expr] = {}  # see keyed
        self._key_family = object()  # names those runs' nodes
        key = (id(gap), escapes)
        with _shared_lock:
            shared = _shared.get(key)
            if shared is not None:
                _shared.move_to_end(key)
        if shared is None:
            shared = self._share(gap)
            with _shared_lock:
                shared = _shared.setdefault(key, shared)
                while len(_shared) > _SHARED_SYNTAXES:
                    _shared.popitem(last=False)
        self.comma, self.colon = shared.comma, shared.colon
        self.library = shared.library
        """The universe rules (:meth:`universe_rules`) and the encoded printable ASCII
        characters, for the grammars that include the universe."""

    def _share(self, gap: Expr) -> _Shared:
        self.comma = seq(gap, literal(","), gap)
        self.colon = seq(gap, literal(":"), gap)
        value = ref(VALUE_RULE)
        universe = {
            VALUE_RULE: alt(self.null, self.true, self.false, self.number, self.string,
                            ref(ARRAY_RULE), ref(OBJECT_RULE)),
            ARRAY_RULE: self.array(self.separated(value), True),
            OBJECT_RULE: self.obj(self.separated(self.member(self.string, value)), True),
        }
        ascii_chars = tuple(self.strings.encode_chars(((c, c),)) for c in range(0x20, 0x7F))
        return _Shared(gap, self.comma, self.colon, RuleLibrary(universe, ascii_chars))

    def container(self, open_: str, body: Expr, close: str, may_be_empty: bool) -> Expr:
        """``open body close`` with gaps; ``body`` must not match the empty string."""
        inner = seq(body, self.gap)
        return seq(literal(open_), self.gap, optional(inner) if may_be_empty else inner,
                   literal(close))

    def obj(self, body: Expr, may_be_empty: bool) -> Expr:
        """An object whose non-empty member list (members joined by commas) is ``body``."""
        return self.container("{", body, "}", may_be_empty)

    def array(self, body: Expr, may_be_empty: bool) -> Expr:
        """An array whose non-empty element list (joined by commas) is ``body``."""
        return self.container("[", body, "]", may_be_empty)

    def member(self, key: Expr, value: Expr) -> Expr:
        """``key : value`` (``key`` is a JSON string-literal language)."""
        return seq(key, self.colon, value)

    def keyed(self, entries: Sequence[tuple[str, Expr]], shared_runs: bool = False) -> Expr:
        """``Alt`` of ``"key" tail`` for distinct keys, as a trie over the keys' characters,
        so a derivative only follows the keys that share the text read so far.

        ``shared_runs`` makes each run of characters between branches a
        :class:`~constrain.grammar.Lazy` node shared by every trie of this syntax: for
        tries built again and again with other tails (an object's keys not written yet,
        after each set written), since a concatenation is rebuilt item by item onto what
        follows it, and the runs would otherwise be, once per trie. Not for languages to
        intersect or complement, which take no lazy nodes."""
        if not entries:
            return NOTHING
        # Code points, each key closed by _CLOSING (below every code point, so keys
        # still sort as strings): a key's closing quote ends its last run.
        return seq(_QUOTE, prefix_tree(
            [((*map(ord, key), _CLOSING), tail) for key, tail in entries],
            self._key_unit, self._key_run if shared_runs else None,
        ))

    def _key_unit(self, code: int) -> Expr:
        if code == _CLOSING:
            return _QUOTE
        return self.strings.encode_chars(((code, code),))

    def _key_run(self, run: Sequence[int]) -> Expr:
        codes = tuple(run)
        found = self._key_runs.get(codes)
        if found is None:
            units = seq(*map(self._key_unit, codes))
            found = self._key_runs[codes] = held((self._key_family, codes), units,
                                                 nullable=False)
        return found

    def separated(self, item: Expr) -> Expr:
        """One or more ``item`` joined by commas."""
        return seq(item, star(seq(self.comma, item)))

    def counted(self, other: Expr, mine: Expr, low: int, high: int | None) -> Expr:
        """Non-empty comma-separated lists of ``other`` and ``mine`` items with ``low`` to
        ``high`` of them ``mine`` (the caller adds the empty list when ``low`` is 0).

        Either alternative may be the empty language; the two should not share strings.
        """
        rest = star(seq(self.comma, other))
        again = seq(self.comma, mine, rest)
        options = [seq(other, rest, repeat(again, low, high))]
        if high is None or high >= 1:
            options.append(seq(mine, rest, repeat(again, max(low - 1, 0),
                                                  None if high is None else high - 1)))
        return alt(*options)

    def universe_rules(self) -> dict[str, Expr]:
        """Rules for any JSON value (``json.value``), array and object. Unconstrained
        containers nest to any depth, so they are rules that reference each other.
        A grammar that includes them names :attr:`library`."""
        return dict(self.library.rules)

