"""Python's recursion limit, raised once for deeply nested schemas and expressions.

Lowering a schema, checking it against its metaschema (``jsonschema`` recurses a few
frames per level), converting expressions and taking derivatives all recurse once or more
per nesting level. The default limit (1,000) refused schemas a few hundred levels deep
with a ``RecursionError``; nesting is bounded instead by the documented limits
(:data:`~constrain.json_nodes.MAX_DOCUMENT_DEPTH`,
:data:`~constrain.json_compiler.MAX_NESTING`, the automaton's budgets).

>>> ensure_recursion_limit()
>>> import sys
>>> sys.getrecursionlimit() >= RECURSION_LIMIT
True
"""

from __future__ import annotations

import sys

__all__ = ["RECURSION_LIMIT", "ensure_recursion_limit"]

RECURSION_LIMIT = 20_000


def ensure_recursion_limit() -> None:
    """Room for structures nested a few thousand levels deep (Python 3.11+ does not use
    the C stack for calls between Python functions).

    The limit is raised process-wide and never lowered again: restoring it while another
    thread is deep inside a derivative would break that thread.
    """
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
