"""Batch extraction: texts in, validated JSON records out (``constrain extract``).

The pieces are usable from Python too: :func:`load_schema` reads a JSON Schema file or a
``module:Model`` reference, :func:`read_records` reads JSONL (a ``text`` field) or plain text
lines, and :func:`run_extraction` appends one line per record to a JSONL file, flushed as it
goes: ``{"id", "input", "output"}`` for a valid record, ``{"id", "error", "raw"}`` for one that
failed. Ids already in the output are skipped, so an interrupted run resumes where it stopped.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "in.txt").write_text("Ann is 31.\\n\\nBob is 40.\\n")
>>> [(r.id, r.text) for r in read_records(folder / "in.txt")]
[(1, 'Ann is 31.'), (3, 'Bob is 40.')]
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from . import api
from .errors import ConstrainError, ValidationFailure

__all__ = [
    "DEFAULT_PROMPT",
    "DEFAULT_PROMPTS",
    "ExtractionStats",
    "Record",
    "build_prompt",
    "done_ids",
    "iter_output",
    "load_schema",
    "read_records",
    "run_extraction",
]

#: The default user message per kind of spec; ``{text}`` and ``{schema}`` are replaced (no
#: other braces are). ``{schema}`` is the JSON Schema, the regex, or the list of choices.
DEFAULT_PROMPTS = {
    "json": "Extract the information from the text below as a JSON object that follows this "
            "JSON Schema:\n{schema}\nUse null for anything the text does not say.\n\n"
            "Text:\n{text}",
    "regex": "From the text below, give the answer matching the regular expression "
             "{schema}\n\nText:\n{text}",
    "choice": "Classify the text below. Answer with one of: {schema}\n\nText:\n{text}",
}
DEFAULT_PROMPT = DEFAULT_PROMPTS["json"]


@dataclasses.dataclass(frozen=True)
class Record:
    """One input text; ``problem`` says why it cannot be processed (written as an error)."""

    id: Any
    text: str
    problem: str | None = None


def load_schema(ref: str | os.PathLike[str]) -> Any:
    """A JSON Schema file's content, or the class named by ``module:Model``.

    Raises :class:`~constrain.errors.SchemaError` with a message fit for a terminal.

    >>> load_schema("json:JSONDecoder").__name__
    'JSONDecoder'
    >>> load_schema("no_such_module_xyz:Model")
    Traceback (most recent call last):
    ...
    constrain.errors.SchemaError: cannot import module 'no_such_module_xyz' (from --schema no_such_module_xyz:Model): No module named 'no_such_module_xyz'
    """
    text = os.fspath(ref)
    path = Path(text)
    if ":" in text and not path.exists() and not text.lower().endswith(".json"):
        module_name, _, attr = text.partition(":")
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # like `python -m`: local modules are importable
        try:
            module = importlib.import_module(module_name)
        except Exception as e:
            raise api.spec_error(
                f"cannot import module {module_name!r} (from --schema {text}): {e}") from e
        target: Any = module
        for part in attr.split("."):
            if not hasattr(target, part):
                raise api.spec_error(f"module {module_name!r} has no attribute {attr!r} "
                                  f"(from --schema {text})")
            target = getattr(target, part)
        return target
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise api.spec_error(f"cannot read schema file {text}: {e}") from e
    try:
        schema = json.loads(raw)
    except json.JSONDecodeError as e:
        raise api.spec_error(f"schema file {text} is not valid JSON: {e.msg} "
                          f"(line {e.lineno}, column {e.colno})") from e
    if not isinstance(schema, (dict, bool)):
        raise api.spec_error(f"schema file {text} holds a JSON {type(schema).__name__}, "
                          "not a JSON Schema object")
    return schema


def _open_text(path: str | os.PathLike[str]) -> IO[str]:
    if os.fspath(path) == "-":
        return sys.stdin
    return open(path, encoding="utf-8")


def read_records(path: str | os.PathLike[str], *, text_field: str = "text",
                 id_field: str = "id") -> list[Record]:
    """The records of a JSONL file (objects with ``text_field``) or of plain text lines.

    JSONL is recognized by a ``.jsonl`` suffix or a first line that starts with ``{``.
    Ids are the ``id_field`` value, else the 1-based line number. A line that is not usable
    becomes a record with a ``problem``. Raises ``ValueError`` when there is no record and
    ``OSError`` when the file cannot be read.
    """
    try:
        with _open_text(path) as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError as e:
        raise ValueError(f"input file {os.fspath(path)} is not UTF-8 text: {e}") from e
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    if not numbered:
        raise ValueError(f"input file {os.fspath(path)} has no records (it is empty)")
    jsonl = os.fspath(path).endswith(".jsonl") or numbered[0][1].lstrip().startswith("{")
    records: list[Record] = []
    for number, line in numbered:
        if not jsonl:
            records.append(Record(number, line.strip()))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            records.append(Record(number, line, f"input line {number} is not JSON: {e.msg}"))
            continue
        if not isinstance(obj, dict):
            records.append(Record(number, line, f"input line {number} is not a JSON object"))
            continue
        rid = obj.get(id_field, number)
        text = obj.get(text_field)
        if not isinstance(text, str):
            records.append(Record(rid, line, f"input line {number} has no string "
                                             f"{text_field!r} field"))
            continue
        records.append(Record(rid, text))
    return records


def _key(record_id: Any) -> str:
    return json.dumps(record_id, sort_keys=True)


def done_ids(output: str | os.PathLike[str], *, retry_errors: bool = False) -> set[str]:
    """Keys (JSON text) of the ids already in ``output``, repairing its tail if needed.

    A last line cut short by a crash is removed. With ``retry_errors``, error rows are
    removed from the file (rewritten atomically) so those records run again.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> _ = out.write_text('{"id": 1}\\n{"id": "b", "error": "x"}\\n{"id": 3, "outp')
    >>> sorted(done_ids(out)), sorted(done_ids(out, retry_errors=True))
    (['"b"', '1'], ['1'])
    """
    path = Path(output)
    if not path.exists():
        return set()
    raw = path.read_text(encoding="utf-8")
    lines = raw.splitlines()
    rows = [_row(line) for line in lines]
    rewrite = False
    if lines and not raw.endswith("\n"):
        rewrite = True  # a newline must separate the next row from the last one
        if rows[-1] is None:  # cut short by a crash mid-write: it never counted
            lines.pop()
            rows.pop()
    keep = [(line, row) for line, row in zip(lines, rows)
            if not (retry_errors and row is not None and "error" in row)]
    if rewrite or len(keep) != len(lines):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line, _ in keep), encoding="utf-8")
        os.replace(tmp, path)
    return {_key(row["id"]) for _, row in keep if row is not None}


def _row(line: str) -> dict[str, Any] | None:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) and "id" in row else None


def build_prompt(text: str, output_type: Any,
                 template: str | None = None) -> list[dict[str, str]]:
    """The chat messages sent for one text: the template with ``{text}``/``{schema}`` filled
    (default: :data:`DEFAULT_PROMPTS` for the output type's kind).

    >>> build_prompt("Ann, 31", {"type": "object"}, "Schema {schema}. Text: {text}")
    [{'role': 'user', 'content': 'Schema {"type": "object"}. Text: Ann, 31'}]
    >>> build_prompt("Great!", api.Choice(["good", "bad"]))[0]["content"].splitlines()[0]
    'Classify the text below. Answer with one of: good, bad'
    """
    spec = api.output_spec(output_type)
    if spec.kind == "regex":
        kind, shown = "regex", spec.spec["regex"]
    elif spec.kind == "choice":
        kind, shown = "choice", ", ".join(spec.spec["choice"])
    else:
        kind = "json"
        schema = spec.schema if spec.schema is not None else spec.spec
        shown = json.dumps(_compact_schema(schema), ensure_ascii=False, default=str)
    content = (template or DEFAULT_PROMPTS[kind]).replace("{schema}", shown)
    return [{"role": "user", "content": content.replace("{text}", text)}]


def _compact_schema(schema: Any) -> Any:
    """The schema without Pydantic's ``title`` noise (shorter prompts, same meaning)."""
    if isinstance(schema, dict):
        return {k: _compact_schema(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_compact_schema(v) for v in schema]
    return schema


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json.loads(json.dumps(dataclasses.asdict(value), default=str))
    return value


@dataclasses.dataclass
class ExtractionStats:
    """Counts of one :func:`run_extraction` call (for the closing summary).

    >>> s = ExtractionStats(records=4, valid=3, errors=1, tokens=200, seconds=4.0)
    >>> s.valid_percent, s.tokens_per_second
    (75.0, 50.0)
    """

    records: int = 0
    skipped: int = 0
    valid: int = 0
    errors: int = 0
    tokens: int = 0
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def valid_percent(self) -> float:
        return 100.0 * self.valid / self.records if self.records else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def summary(self, output: str | os.PathLike[str] = "") -> str:
        """One line for the terminal.

        >>> print(ExtractionStats(records=2, valid=2, tokens=50, seconds=2.0).summary())
        2 records, 0 skipped (already done): 2 valid (100.0%), 0 errors; 50 tokens in 2.0 s (25.0 tokens/s)
        """
        where = f" -> {os.fspath(output)}" if output else ""
        stop = " (interrupted)" if self.interrupted else ""
        return (f"{self.records} records{stop}, {self.skipped} skipped (already done): "
                f"{self.valid} valid ({self.valid_percent:.1f}%), {self.errors} errors; "
                f"{self.tokens} tokens in {self.seconds:.1f} s "
                f"({self.tokens_per_second:.1f} tokens/s){where}")


#: Consecutive failures to *generate* (not to validate) after which a run with no
#: success stops: the model or the constraint is broken, not the records.
MAX_FAILURES_IN_A_ROW = 5


def run_extraction(
    output_type: Any,
    records: Sequence[Record],
    output: str | os.PathLike[str],
    *,
    model: Any = None,
    tokenizer: Any = None,
    prompt_template: str | None = None,
    limit: int | None = None,
    retry_errors: bool = False,
    batch_size: int = 1,
    schema_options: Mapping[str, Any] | None = None,
    progress: bool = True,
    constraint: Any = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    **gen_kwargs: Any,
) -> ExtractionStats:
    """Extract one ``output_type`` value per record into the JSONL file ``output``.

    ``output_type`` is anything :func:`constrain.api.output_spec` accepts (a JSON Schema
    dict, a Pydantic model, ...). ``constraint`` is an already compiled constraint to use
    instead of compiling the spec per call; ``gen_kwargs`` go to
    :func:`constrain.generation.generate_batch`, which gets ``batch_size`` records at a time
    (more throughput on a CPU; a batch is written when all its rows are done). JSON outputs
    are compiled with :func:`constrain.api.json_options` updated with ``schema_options``
    (ignored with ``constraint``). Each line
    is flushed when written; a ``KeyboardInterrupt`` stops after the current batch with the
    stats marked interrupted.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    spec = api.output_spec(output_type).with_options(schema_options)
    if constraint is None:
        gen_kwargs = {**spec.generation_kwargs(schema_options), **gen_kwargs}
    done = done_ids(output, retry_errors=retry_errors)
    todo = [r for r in records if _key(r.id) not in done]
    stats = ExtractionStats(skipped=len(records) - len(todo))
    if limit is not None:
        todo = todo[:max(limit, 0)]
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    bar = _progress(len(todo), progress)
    failures_in_a_row = 0
    with open(output, "a", encoding="utf-8") as out:
        try:
            for start in range(0, len(todo), batch_size):
                batch = todo[start:start + batch_size]
                rows = _extract_batch(spec, batch, model, tokenizer, prompt_template,
                                      constraint, gen_kwargs, stats)
                for row, generated in rows:
                    failures_in_a_row = 0 if generated else failures_in_a_row + 1
                    out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                    out.flush()
                    stats.records += 1
                    if "error" in row:
                        stats.errors += 1
                    else:
                        stats.valid += 1
                    if on_record is not None:
                        on_record(row)
                bar.update(len(rows))
                bar.set_postfix_str(f"valid {stats.valid_percent:.0f}%", refresh=False)
                if failures_in_a_row >= MAX_FAILURES_IN_A_ROW and stats.valid == 0:
                    raise ConstrainError(
                        f"generation failed for the first {failures_in_a_row} records, "
                        f"stopping; last error: {rows[-1][0]['error']}")
        except KeyboardInterrupt:
            stats.interrupted = True
        finally:
            bar.close()
    return stats


def _extract_batch(spec: api.OutputSpec, batch: Sequence[Record], model: Any, tokenizer: Any,
                   template: str | None, constraint: Any, gen_kwargs: dict[str, Any],
                   stats: ExtractionStats) -> list[tuple[dict[str, Any], bool]]:
    """(output row, whether generation itself worked) for each record, in order."""
    rows: list[tuple[dict[str, Any], bool] | None] = [None] * len(batch)
    todo: list[int] = []
    for i, record in enumerate(batch):
        if record.problem is not None:
            rows[i] = ({"id": record.id, "error": record.problem, "raw": record.text}, True)
        else:
            todo.append(i)
    prompts = [build_prompt(batch[i].text, spec, template) for i in todo]
    target = constraint if constraint is not None else spec.spec
    try:
        if len(prompts) == 1:
            results = [api._generate(target, prompts[0], model=model, tokenizer=tokenizer,
                                     **gen_kwargs)]
        elif prompts:
            results = api._generate_batch(target, prompts, model=model, tokenizer=tokenizer,
                                          **gen_kwargs)
        else:
            results = []
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001  (one batch's failure must not lose the others)
        for i in todo:
            rows[i] = ({"id": batch[i].id, "error": f"generation failed: {type(e).__name__}: "
                        f"{e}", "raw": ""}, False)
        return [r for r in rows if r is not None]
    if results:
        stats.tokens += sum(len(r.token_ids) for r in results)
        stats.seconds += max(r.seconds for r in results)  # the batch's rows run together
    for i, result in zip(todo, results):
        record = batch[i]
        try:
            value = spec.parse(result.text, finished=result.finished)
        except ValidationFailure as e:
            rows[i] = ({"id": record.id, "error": str(e), "raw": result.text}, True)
            continue
        rows[i] = ({"id": record.id, "input": record.text, "output": _jsonable(value)}, True)
    return [r for r in rows if r is not None]


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, file=sys.stderr, unit="rec", dynamic_ncols=True,
                desc="extract")


def iter_output(path: str | os.PathLike[str]) -> Iterable[dict[str, Any]]:
    """The rows of an extraction output file (skipping a line cut short by a crash)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = _row(line)
            if row is not None:
                yield row
