"""Fast-forward: turn a matcher's forced bytes into tokens a decoder can feed without asking
the model for each one.

When every valid continuation starts with the same bytes (the fixed keys of a JSON object,
the ``", "`` between items), a decoder may append their tokens directly and run the model
once over all of them. Which tokens? Every token the matcher allows is consistent with the
forced bytes, so an allowed token no longer than the rest of them *is* a prefix of them: take
the longest, advance, repeat. Stop early, leaving the rest to the model, as soon as some
allowed token runs past the end of the forced bytes: the model may prefer a token that
crosses that boundary (``' "J'`` rather than ``' "'`` then ``'J'``), and forcing a
tokenization it would not choose makes its next predictions worse.

>>> from constrain import Vocabulary, compile_regex
>>> vocab = Vocabulary.from_token_bytes([b'{"', b'id', b'":', b' ', b'1', b'2', b'}', None],
...                                     eos_token_ids=[7])
>>> m = compile_regex(r'\\{"id": [12]\\}', vocab).matcher()
>>> m.forced_bytes(), forced_tokens(m)
(b'{"id": ', [0, 1, 2, 3])
>>> m.allowed_token_ids().tolist()
[4, 5]
"""

from __future__ import annotations

import numpy as np

from .matcher import Matcher

__all__ = ["forced_tokens"]


def forced_tokens(matcher: Matcher, max_tokens: int | None = None) -> list[int]:
    """Advance ``matcher`` over the tokens of its forced bytes and return them.

    At most ``max_tokens`` tokens; an empty list when nothing is forced, or when the model
    should choose how to tokenize the boundary (see the module docstring).

    >>> from constrain import Vocabulary, compile_choice
    >>> vocab = Vocabulary.from_token_bytes([b"ab", b"a", b"b", b"c", None], eos_token_ids=[4])
    >>> m = compile_choice(["abc"], vocab).matcher()
    >>> forced_tokens(m), m.is_accepting()
    ([0, 3], True)
    """
    lengths = matcher.compiled.vocab.token_lengths
    out: list[int] = []
    rest = len(matcher.forced_bytes())
    while rest > 0 and (max_tokens is None or len(out) < max_tokens):
        allowed = matcher.allowed_token_ids()
        sizes = lengths[allowed]
        if not len(allowed) or not 0 < int(sizes.max()) <= rest:
            break
        token = int(allowed[int(np.argmax(sizes))])
        if not matcher.advance(token):
            break
        out.append(token)
        rest -= int(lengths[token])
    return out
