"""Every exception users of ``constrain`` can catch, in one place.

All errors derive from :class:`ConstrainError` and also from the builtin that fits, so
``except ValueError`` keeps working in code that does not know this library.

>>> from constrain.errors import RegexSyntaxError, ConstrainError
>>> issubclass(RegexSyntaxError, ValueError) and issubclass(RegexSyntaxError, ConstrainError)
True
"""

from __future__ import annotations

__all__ = [
    "CacheError",
    "ConstrainError",
    "GrammarError",
    "MissingDependencyError",
    "RegexSyntaxError",
    "ResourceLimitError",
    "SchemaError",
    "TokenizerError",
    "UnsupportedRegexError",
    "UnsupportedSchemaError",
    "ValidationFailure",
]


class ConstrainError(Exception):
    """Root of every error raised by ``constrain``."""


class RegexSyntaxError(ConstrainError, ValueError):
    """A regular expression is malformed; ``position`` is the 0-based index in ``pattern``."""

    def __init__(self, message: str, pattern: str, position: int) -> None:
        self.pattern = pattern
        self.position = position
        self.reason = message
        super().__init__(f"{message} at position {position} in regex {pattern!r}")


class UnsupportedRegexError(ConstrainError, ValueError):
    """A well-formed regex uses a construct that cannot be enforced (backreference, lookaround...)."""

    def __init__(self, construct: str, pattern: str, position: int) -> None:
        self.construct = construct
        self.pattern = pattern
        self.position = position
        super().__init__(
            f"unsupported regex construct {construct} at position {position} in {pattern!r}"
        )


class GrammarError(ConstrainError, ValueError):
    """A grammar is malformed: unknown rule, left recursion, a reference inside ``not``..."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        self.rule = rule
        super().__init__(message if rule is None else f"rule {rule!r}: {message}")


class SchemaError(ConstrainError, ValueError):
    """A JSON Schema is invalid (fails its metaschema, bad $ref...); ``pointer`` locates it."""

    def __init__(self, message: str, pointer: str = "", keyword: str | None = None) -> None:
        self.pointer = pointer
        self.keyword = keyword
        self.reason = message
        where = f" at {pointer or '#'}" if pointer is not None else ""
        super().__init__(f"{message}{where}")


class UnsupportedSchemaError(ConstrainError, ValueError):
    """A valid JSON Schema uses ``keyword`` at ``pointer`` in a way that cannot be enforced exactly."""

    def __init__(self, keyword: str, pointer: str, detail: str = "") -> None:
        self.keyword = keyword
        self.pointer = pointer or "#"
        self.detail = detail
        message = f"keyword {keyword!r} at {self.pointer} cannot be enforced exactly"
        super().__init__(f"{message}: {detail}" if detail else message)


class TokenizerError(ConstrainError, ValueError):
    """A tokenizer or vocabulary cannot be understood (unknown byte encoding, bad ids...)."""


class ResourceLimitError(ConstrainError, RuntimeError):
    """A budget (automaton states, stack configurations, time) was exhausted."""

    def __init__(self, limit: str, value: float, hint: str = "") -> None:
        self.limit = limit
        self.value = value
        message = f"resource limit {limit}={value} exceeded"
        super().__init__(f"{message}; {hint}" if hint else message)


class CacheError(ConstrainError, OSError):
    """A cache directory cannot be used (not writable, not a directory)."""


class MissingDependencyError(ConstrainError, ImportError):
    """An optional dependency is missing; the message names the pip extra to install."""

    def __init__(self, package: str, extra: str, install: str | None = None) -> None:
        self.package = package
        self.extra = extra
        how = install or f"pip install 'constrain[{extra}]'"
        super().__init__(f"{package} is required for this feature: {how}")


class ValidationFailure(ConstrainError, ValueError):
    """Generated or given text does not satisfy a constraint; ``position`` is where it failed."""

    def __init__(self, message: str, position: int | None = None, path: str = "") -> None:
        self.position = position
        self.path = path
        super().__init__(message)
