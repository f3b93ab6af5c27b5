"""The ``constrain`` command: ``extract``, ``compile`` and ``check``.

- ``constrain extract --schema S --input I --output O``: one validated JSON record per input
  text, on the embedded SmolLM2 model by default (see :mod:`constrain.extract`).
- ``constrain compile --schema S | --regex R | --choice A B ...``: what a spec compiles to,
  how long it takes, and which keyword or construct is not supported, if any.
- ``constrain check --schema S --instance X``: whether an instance matches, and where not.

Exit status: 0 success (``check``: the instance matches), 1 the instance does not match or
the spec is not supported, 2 bad command line or input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import api
from .errors import (
    ConstrainError,
    RegexSyntaxError,
    SchemaError,
    UnsupportedRegexError,
    UnsupportedSchemaError,
    ValidationFailure,
)

__all__ = ["main"]

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: The command's disk cache (the library itself has none unless set_cache_dir is called).
DEFAULT_CACHE = Path("~/.cache/constrain")


class CliError(Exception):
    """A message for the terminal and an exit status (no traceback)."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- specs

def _spec_from_args(args: argparse.Namespace) -> Any:
    """The output type named by --schema / --regex / --choice."""
    from .extract import load_schema

    if getattr(args, "regex", None) is not None:
        return api.Regex(args.regex)
    if getattr(args, "choice", None):
        return api.Choice(args.choice)
    return load_schema(args.schema)


def _load_vocab(name: str) -> Any:
    from .vocab import Vocabulary

    if name == "qwen":
        from .assets import load_qwen_encoding

        enc = load_qwen_encoding()
        return Vocabulary.from_tiktoken(enc, eos_token_ids=[enc.encode_single_token("<|im_end|>")])
    from .assets import load_smollm2_tokenizer
    from .cache import cache_dir

    return Vocabulary.from_hf(load_smollm2_tokenizer(cache_dir()))


def _use_cache(args: argparse.Namespace) -> None:
    from .cache import set_cache_dir
    from .errors import CacheError

    if not args.no_cache:
        try:
            set_cache_dir(Path(args.cache_dir).expanduser())
        except CacheError as e:  # a cache is an optimization: go on without it
            _say(f"constrain: warning: no disk cache ({e})")


def _unsupported_message(e: ConstrainError) -> str:
    if isinstance(e, UnsupportedSchemaError):
        return (f"unsupported: keyword {e.keyword!r} at {e.pointer}"
                + (f": {e.detail}" if e.detail else ""))
    if isinstance(e, UnsupportedRegexError):
        return f"unsupported regex construct {e.construct} at position {e.position}"
    return f"{type(e).__name__}: {e}"


def _schema_gaps(spec: api.OutputSpec) -> list[str]:
    """Every keyword a JSON Schema spec cannot enforce (a lenient compile's warnings)."""
    from .json_schema import ApproximationWarning, JsonSchemaOptions, schema_to_grammar

    if spec.schema is None and spec.kind != "schema":
        return []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            schema_to_grammar(spec.spec, JsonSchemaOptions(lenient=True))
        except ConstrainError:
            return []
    return [str(w.message) for w in caught if issubclass(w.category, ApproximationWarning)]


# ----------------------------------------------------------------------------- extract

def _load_model(model: str | None) -> tuple[Any, Any]:
    """(model, tokenizer) for ``--model``: the embedded default, a folder or a GGUF file."""
    if model is None:
        from .assets import load_smollm2_model, load_smollm2_tokenizer
        from .cache import cache_dir

        # The same calls as generation's defaults: both share one loaded copy.
        return load_smollm2_model(cache_dir()), load_smollm2_tokenizer(cache_dir())
    path = Path(model)
    if not path.exists():
        raise CliError(f"--model {model}: no such file or folder (a local Hugging Face "
                       "model folder or a .gguf file)")
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise CliError(f"--model needs transformers: pip install 'constrain[hf]' ({e})") from e
    folder, gguf = (path.parent, {"gguf_file": path.name}) if path.is_file() else (path, {})
    try:
        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True, **gguf)
        lm = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, **gguf)
    except Exception as e:
        raise CliError(f"--model {model}: cannot load it: {type(e).__name__}: {e}") from e
    lm.eval()  # type: ignore[no-untyped-call]
    return lm, tok


def _read_template(value: str | None) -> str | None:
    if value is None:
        return None
    path = Path(value)
    if "{text}" not in value and path.is_file():
        value = path.read_text(encoding="utf-8")
    if "{text}" not in value:
        raise CliError("--prompt-template must contain {text} (a template or a file with one)")
    return value


def cmd_extract(args: argparse.Namespace) -> int:
    from . import extract

    output_type = _spec_from_args(args)
    spec = api.output_spec(output_type)
    template = _read_template(args.prompt_template)
    if args.batch_size < 1:
        raise CliError("--batch-size must be at least 1")
    try:
        records = extract.read_records(args.input, text_field=args.text_field)
    except (OSError, ValueError) as e:
        raise CliError(f"cannot read --input: {e}") from e
    out = Path(args.output)
    if out.exists() and out.is_dir():
        raise CliError(f"--output {out} is a folder, not a file")
    if out.resolve() == Path(args.input).resolve():
        raise CliError("--output must not be the --input file")
    try:  # unsupported keywords do not depend on the vocabulary: fail before loading a model
        spec.compile(_byte_vocab(), **_schema_options(args))
    except (UnsupportedSchemaError, UnsupportedRegexError) as e:
        raise CliError(f"the schema cannot be enforced: {_unsupported_message(e)}",
                       EXIT_MISMATCH) from e
    _use_cache(args)
    if not args.quiet:
        _say(f"constrain extract: loading {args.model or 'the embedded SmolLM2-135M-Instruct'}")
    model, tokenizer = _load_model(args.model)
    gen: dict[str, Any] = {"max_new_tokens": args.max_new_tokens,
                           "temperature": args.temperature, "seed": args.seed}
    stats = extract.run_extraction(
        spec, records, out, model=model, tokenizer=tokenizer, prompt_template=template,
        limit=args.limit, retry_errors=args.retry_errors, batch_size=args.batch_size,
        schema_options=_schema_options(args),
        progress=not args.quiet, **gen)
    _say(f"constrain extract: {stats.summary(out)}")
    return EXIT_INTERRUPTED if stats.interrupted else EXIT_OK


# ----------------------------------------------------------------------------- compile

def _walk(compiled: Any, steps: int, seed: int) -> tuple[bytes, list[float], bool]:
    """Follow random allowed tokens (EOS avoided until the end) to build states; returns
    (bytes walked, seconds per mask, accepting at the end)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    m = compiled.matcher()
    eos = compiled.vocab.eos_token_ids
    times: list[float] = []
    walked = bytearray()
    for _ in range(steps):
        t0 = time.perf_counter()
        allowed = m.allowed_token_ids()
        times.append(time.perf_counter() - t0)
        choices = [int(t) for t in allowed if int(t) not in eos]
        if not choices:
            break
        token = choices[int(rng.integers(len(choices)))]
        m.advance(token)
        walked += compiled.vocab.token_bytes[token] or b""
    return bytes(walked), times, m.is_accepting()


def cmd_compile(args: argparse.Namespace) -> int:
    spec = api.output_spec(_spec_from_args(args))
    _use_cache(args)
    t0 = time.perf_counter()
    vocab = _load_vocab(args.vocab)
    t_vocab = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            compiled = spec.compile(vocab, **_schema_options(args))
    except (UnsupportedSchemaError, UnsupportedRegexError) as e:
        print(_unsupported_message(e))
        gaps = _schema_gaps(spec) if isinstance(e, UnsupportedSchemaError) else []
        if len(gaps) > 1:
            print(f"all {len(gaps)} keywords that cannot be enforced (lenient=True would "
                  "ignore them):")
            for gap in gaps:
                print(f"  - {gap}")
        return EXIT_MISMATCH
    t_compile = time.perf_counter() - t0
    for note in notes:
        print(f"note: {note.message}")
    before = compiled.info()
    walked, times, accepting = _walk(compiled, args.walk, args.seed)
    after = compiled.info()
    report = {
        "kind": after.kind, "vocab": args.vocab, "vocab_size": vocab.size,
        "rules": after.rules, "states_after_compile": before.states_built,
        "states_after_walk": after.states_built, "terms": after.terms_built,
        "seconds_vocab": round(t_vocab, 4), "seconds_compile": round(t_compile, 4),
        "ms_first_mask": round(1e3 * times[0], 3) if times else None,
        "ms_mean_mask": round(1e3 * sum(times) / len(times), 3) if times else None,
        "ms_max_mask": round(1e3 * max(times), 3) if times else None,
        "walk_steps": len(times), "walk_text": walked.decode("utf-8", "replace"),
        "walk_accepting": accepting,
    }
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return EXIT_OK
    print(f"{report['kind']} constraint, {report['rules']} rule(s), vocabulary {args.vocab} "
          f"({vocab.size} ids)")
    print(f"  vocabulary loaded in {t_vocab:.2f} s, compiled in {1e3 * t_compile:.1f} ms")
    print(f"  automaton states: {before.states_built} after compile, "
          f"{after.states_built} after a {len(times)}-step warm-up walk "
          f"({after.terms_built} derivative terms)")
    if times:
        print(f"  masks: first {report['ms_first_mask']} ms, mean {report['ms_mean_mask']} ms, "
              f"max {report['ms_max_mask']} ms")
    print(f"  walk: {report['walk_text']!r} ({'complete' if accepting else 'incomplete'})")
    return EXIT_OK


# ----------------------------------------------------------------------------- check

def _byte_vocab() -> Any:
    from .vocab import Vocabulary

    return Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                       eos_token_ids=[256])


def _first_rejected_byte(spec: api.OutputSpec, data: bytes,
                         options: dict[str, Any]) -> int | None:
    """Byte offset where the automaton rejects ``data`` (``len(data)``: ends too early);
    None when it is accepted."""
    m = spec.compile(_byte_vocab(), **options).matcher()
    for i, b in enumerate(data):
        if not m.advance(b):
            return i
    return None if m.is_accepting() else len(data)


def _pointer_line(data: bytes, offset: int) -> str:
    start = max(0, offset - 30)
    before = data[start:offset].decode("utf-8", "replace")
    after = data[offset:offset + 30].decode("utf-8", "replace")
    shown = repr(before + after)
    return f"    {shown}\n    {' ' * (len(repr(before)) - 1)}^"


def _instance_text(value: str) -> str:
    path = Path(value)
    if len(value) < 4096 and "\n" not in value and path.is_file():
        text = path.read_text(encoding="utf-8")
        return text.removesuffix("\n")
    return value


#: ``check`` compares with the schema's exact language (every spelling ``jsonschema``
#: accepts) unless options are given: a difference there is a gap of the compiler.
_EXACT_JSON = {"whitespace_pattern": None, "whitespace": "flexible", "property_order": "any",
               "strict_additional_properties": False, "escapes": "all"}


def cmd_check(args: argparse.Namespace) -> int:
    spec = api.output_spec(_spec_from_args(args))
    text = _instance_text(args.instance)
    data = text.encode("utf-8")
    ok = True
    options = {**_EXACT_JSON, **_schema_options(args)} if spec.is_json else {}
    spec = spec.with_options(options)
    if spec.is_json:
        try:
            json.loads(text)
        except json.JSONDecodeError as e:
            offset = len(text[:e.pos].encode("utf-8"))
            print(f"not JSON: {e.msg} at byte {offset}\n{_pointer_line(data, offset)}")
            return EXIT_MISMATCH
        try:
            spec.parse(text)
            print("valid: the instance validates against the schema")
        except ValidationFailure as e:
            ok = False
            print(f"invalid: {e}")
    try:
        rejected = _first_rejected_byte(spec, data, options)
    except (UnsupportedSchemaError, UnsupportedRegexError) as e:
        print(f"the constraint cannot be compiled: {_unsupported_message(e)}")
        return EXIT_MISMATCH
    if rejected is None:
        print("accepted: constrained decoding can produce exactly this text")
    else:
        ok = False
        where = "the text ends too early" if rejected == len(data) else "rejected"
        print(f"not producible: {where} at byte {rejected}\n{_pointer_line(data, rejected)}")
    return EXIT_OK if ok else EXIT_MISMATCH


# ----------------------------------------------------------------------------- parser

def _add_spec_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument("--schema", metavar="S",
                       help="a JSON Schema file, or module:Model (a Pydantic model class)")
    group.add_argument("--regex", metavar="R", help="a regular expression (Python re syntax)")
    group.add_argument("--choice", metavar="A", nargs="+", help="the allowed strings")
    json = p.add_argument_group("JSON Schema options (defaults suit generation)")
    json.add_argument("--whitespace", choices=sorted(_WHITESPACE),
                      help="between JSON tokens: none (compact, the default), at most one "
                           "space (one-space), or up to 20 whitespace characters (flexible)")
    json.add_argument("--property-order", choices=["schema", "any"],
                      help="object members in schema order, or any order (default schema)")
    json.add_argument("--allow-extra-properties", action="store_true",
                      help="allow keys no schema lists where additionalProperties is absent")
    json.add_argument("--lenient", action="store_true",
                      help="ignore keywords that cannot be enforced (with a warning)")
    json.add_argument("--resource", action="append", metavar="FILE",
                      help="another schema document a $ref may name, by the absolute URI of "
                           "its $id (repeatable; nothing is ever fetched)")


_WHITESPACE: dict[str, dict[str, Any]] = {
    "compact": {"whitespace_pattern": ""},
    "one-space": {"whitespace_pattern": "[ ]?"},
    "flexible": {"whitespace_pattern": None, "whitespace": "flexible"},
}


def _schema_options(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON Schema option overrides given on the command line."""
    options: dict[str, Any] = {}
    if args.whitespace:
        options.update(_WHITESPACE[args.whitespace])
    if args.property_order:
        options["property_order"] = args.property_order
    if args.allow_extra_properties:
        options["strict_additional_properties"] = False
    if args.lenient:
        options["lenient"] = True
    if args.resource:
        options["resources"] = _resources(args.resource)
    return options


def _resources(files: list[str]) -> dict[str, Any]:
    """The schema documents of ``--resource`` files, by their ``$id``."""
    from urllib.parse import urlsplit

    from .extract import load_schema

    found: dict[str, Any] = {}
    for name in files:
        document = load_schema(name) if name.lower().endswith(".json") or Path(name).exists() \
            else None
        uri = document.get("$id", document.get("id")) if isinstance(document, dict) else None
        if not isinstance(uri, str) or not urlsplit(uri).scheme:
            raise CliError(f"--resource {name}: not a schema file whose $id is an absolute "
                           "URI (the name a $ref gives it)")
        if uri in found:
            raise CliError(f"--resource {name}: a second document with the $id {uri}")
        found[uri] = document
    return found


def _add_cache_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache-dir", default=str(DEFAULT_CACHE), metavar="DIR",
                   help="where converted model weights and vocabulary tables are kept "
                        f"(default {DEFAULT_CACHE}; the first run fills it)")
    p.add_argument("--no-cache", action="store_true", help="use no disk cache")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``constrain`` command."""
    parser = argparse.ArgumentParser(
        prog="constrain", description="Structured output for language models.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("extract", help="texts in, validated JSON records out",
                       description="Extract one validated record per input text (JSONL out; "
                                   "ids already in the output are skipped).")
    _add_spec_args(p)
    p.add_argument("--input", "-i", required=True, metavar="I",
                   help="JSONL with a text field, or plain text lines ('-' for stdin)")
    p.add_argument("--output", "-o", required=True, metavar="O", help="output JSONL (appended)")
    p.add_argument("--model", "-m", metavar="M",
                   help="a local Hugging Face model folder or .gguf file "
                        "(default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--max-new-tokens", type=int, default=256, metavar="N")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--prompt-template", metavar="T",
                   help="user message with {text} (and optionally {schema}), or a file with one")
    p.add_argument("--text-field", default="text", help="JSONL field holding the text")
    p.add_argument("--limit", type=int, metavar="K", help="process at most K new records")
    p.add_argument("--batch-size", type=int, default=4, metavar="B",
                   help="records generated together (default 4; more throughput on CPU)")
    p.add_argument("--retry-errors", action="store_true",
                   help="drop error rows from the output and run those records again")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    _add_cache_args(p)
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("compile", help="what a spec compiles to, and how fast",
                       description="Compile a spec for a vocabulary and walk it to build states.")
    _add_spec_args(p)
    p.add_argument("--vocab", choices=["smollm2", "qwen"], default="smollm2")
    p.add_argument("--walk", type=int, default=64, metavar="STEPS",
                   help="random warm-up walk length (default 64)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_cache_args(p)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("check", help="does an instance match a spec, and where not",
                       description="Check an instance against a spec (exit 0 if it matches).")
    _add_spec_args(p)
    p.add_argument("--instance", required=True, metavar="X", help="a file, or the text itself")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``constrain`` command; returns the exit status.

    >>> main(["check", "--choice", "red", "green", "--instance", "green"])
    accepted: constrained decoding can produce exactly this text
    0
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CliError as e:
        _say(f"constrain {args.command}: error: {e}")
        return e.status
    except (SchemaError, RegexSyntaxError, ValidationFailure) as e:
        _say(f"constrain {args.command}: error: {e}")
        return EXIT_USAGE
    except ConstrainError as e:
        _say(f"constrain {args.command}: error: {type(e).__name__}: {e}")
        return EXIT_MISMATCH
    except KeyboardInterrupt:
        _say(f"constrain {args.command}: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
