"""The ``constrain`` command: error paths, resumable extraction, compile and check.

Fast tests call ``main([...])`` with the model replaced (``cli._load_backend`` and
``api._generate``); a few run the installed entry point in a subprocess; one
``@pytest.mark.model`` test extracts two bundled records with the real SmolLM2.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from model_support import _model_cache_folder  # noqa: F401

from constrain import api, cli
from constrain.extract import done_ids, read_records

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"


@dataclasses.dataclass
class FakeResult:
    text: str
    finished: bool = True
    token_ids: list[int] = dataclasses.field(default_factory=lambda: [0] * 10)
    model_calls: int = 10
    forced_tokens: int = 0
    seconds: float = 0.5


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs must not switch the whole test session's disk cache on."""
    monkeypatch.setattr(cli, "_use_cache", lambda args: None)


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch, byte_vocab: Any) -> Any:
    """No model: ``answer(prompt_text) -> str | Exception`` decides each output."""
    calls: list[str] = []

    def install(answer: Any) -> list[str]:
        def generate(spec: Any, prompt: Any, **kwargs: Any) -> FakeResult:
            text = prompt[-1]["content"] if isinstance(prompt, list) else prompt
            calls.append(text)
            out = answer(text)
            if isinstance(out, Exception):
                raise out
            return out if isinstance(out, FakeResult) else FakeResult(out)

        def generate_batch(spec: Any, prompts: Any, **kwargs: Any) -> list[FakeResult]:
            return [generate(spec, p, **kwargs) for p in prompts]

        monkeypatch.setattr(api, "_generate", generate)
        monkeypatch.setattr(api, "_generate_batch", generate_batch)
        monkeypatch.setattr(cli, "_load_model", lambda model: (None, None))
        return calls

    return install


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ bad input


def test_schema_file_that_is_not_json(tmp_path: Path, capsys: Any) -> None:
    schema = _write(tmp_path / "s.json", "{not json")
    out = _write(tmp_path / "out.jsonl", '{"id": 1, "input": "x", "output": {}}\n')
    status = cli.main(["extract", "--schema", str(schema), "--input",
                       str(DATA / "contacts.jsonl"), "--output", str(out)])
    assert status == 2
    err = capsys.readouterr().err
    assert "is not valid JSON" in err and "line 1, column 2" in err and "Traceback" not in err
    assert out.read_text() == '{"id": 1, "input": "x", "output": {}}\n'  # untouched


@pytest.mark.parametrize("ref, message", [
    ("no_such_pkg_q:Model", "cannot import module 'no_such_pkg_q'"),
    ("json:NoSuchModel", "has no attribute 'NoSuchModel'"),
], ids=["module", "attribute"])
def test_unknown_module_model(tmp_path: Path, capsys: Any, ref: str, message: str) -> None:
    status = cli.main(["extract", "--schema", ref, "--input", str(DATA / "contacts.jsonl"),
                       "--output", str(tmp_path / "o.jsonl")])
    assert status == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("content", ["", "\n  \n"], ids=["empty", "blank-lines"])
def test_empty_input(tmp_path: Path, capsys: Any, content: str) -> None:
    inp = _write(tmp_path / "in.jsonl", content)
    status = cli.main(["extract", "--regex", "[a-z]+", "--input", str(inp),
                       "--output", str(tmp_path / "o.jsonl")])
    assert status == 2 and "has no records" in capsys.readouterr().err


def test_unreadable_input(tmp_path: Path, capsys: Any) -> None:
    status = cli.main(["extract", "--regex", "a", "--input", str(tmp_path / "missing.txt"),
                       "--output", str(tmp_path / "o.jsonl")])
    assert status == 2 and "No such file" in capsys.readouterr().err
    _write(tmp_path / "bin.txt", "").write_bytes(b"\xff\xfe\x00bad")
    status = cli.main(["extract", "--regex", "a", "--input", str(tmp_path / "bin.txt"),
                       "--output", str(tmp_path / "o.jsonl")])
    assert status == 2 and "not UTF-8" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: Any) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["extract", "--input", "x"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        cli.main(["check", "--regex", "a", "--choice", "b", "--instance", "a"])


def test_prompt_template_needs_text(tmp_path: Path, capsys: Any) -> None:
    status = cli.main(["extract", "--regex", "a", "--input", str(DATA / "contacts.jsonl"),
                       "--output", str(tmp_path / "o"), "--prompt-template", "no slot"])
    assert status == 2 and "{text}" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--schema", "{bad"], "is not valid JSON"),
    (["--schema", "nosuchmodule_zz:M"], "cannot import module"),
], ids=["schema-not-json", "unknown-model"])
def test_entry_point_reports_clearly(tmp_path: Path, args: list[str], message: str) -> None:
    if args[1] == "{bad":
        args = ["--schema", str(_write(tmp_path / "bad.json", "{bad"))]
    proc = subprocess.run(
        [sys.executable, "-m", "constrain.cli", "extract", *args,
         "--input", str(DATA / "contacts.jsonl"), "--output", str(tmp_path / "o.jsonl")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1  # one clear line


# ------------------------------------------------------------------ extraction


def test_extract_resumes_and_keeps_going(tmp_path: Path, fake_model: Any, capsys: Any) -> None:
    inp = _write(tmp_path / "in.txt", "alpha\nbeta\n\ngamma\ndelta\n")
    out = tmp_path / "out.jsonl"
    calls = fake_model(lambda text: "BAD" if "gamma" in text else text.rsplit("\n", 1)[-1])
    args = ["extract", "--regex", "[a-z]+", "--input", str(inp), "--output", str(out), "-q"]
    assert cli.main([*args, "--limit", "2"]) == 0
    assert [r["id"] for r in _lines(out)] == [1, 2]
    assert "2 records, 0 skipped" in capsys.readouterr().err
    assert cli.main(args) == 0
    rows = _lines(out)
    assert [r["id"] for r in rows] == [1, 2, 4, 5]
    assert rows[0] == {"id": 1, "input": "alpha", "output": "alpha"}
    assert rows[2]["error"].startswith("output 'BAD' does not match") and rows[2]["raw"] == "BAD"
    err = capsys.readouterr().err
    assert "2 records, 2 skipped" in err and "1 valid (50.0%), 1 errors" in err
    assert "tokens/s" in err
    assert len(calls) == 4
    assert cli.main(args) == 0 and len(calls) == 4  # all done: nothing generated
    calls_before = len(calls)
    fake_model(lambda text: text.rsplit("\n", 1)[-1])
    assert cli.main([*args, "--retry-errors"]) == 0
    rows = _lines(out)
    assert [r["id"] for r in rows] == [1, 2, 5, 4] and "error" not in rows[3]
    assert len(calls) == calls_before + 1


def test_extract_jsonl_ids_problems_and_template(tmp_path: Path, fake_model: Any) -> None:
    inp = _write(tmp_path / "in.jsonl", "\n".join([
        json.dumps({"id": "a", "text": "one"}),
        "{broken",
        json.dumps({"id": "c", "body": "no text field"}),
        json.dumps({"text": "four"}),
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    calls = fake_model(lambda text: "ok")
    assert cli.main(["extract", "--choice", "ok", "no", "--input", str(inp), "--output",
                     str(out), "-q", "--prompt-template", "Say ok about: {text}"]) == 0
    rows = _lines(out)
    assert [r["id"] for r in rows] == ["a", 2, "c", 4]
    assert rows[0]["output"] == "ok" and rows[3]["input"] == "four"
    assert "not JSON" in rows[1]["error"] and "no string 'text' field" in rows[2]["error"]
    assert calls == ["Say ok about: one", "Say ok about: four"]


def test_extract_generation_failures(tmp_path: Path, fake_model: Any, capsys: Any) -> None:
    inp = _write(tmp_path / "in.txt", "".join(f"t{i}\n" for i in range(8)))
    out = tmp_path / "out.jsonl"
    fake_model(lambda text: RuntimeError("model exploded"))
    assert cli.main(["extract", "--regex", "t[0-9]", "--input", str(inp), "--output",
                     str(out), "-q", "--batch-size", "1"]) == 1
    rows = _lines(out)
    assert len(rows) == 5 and all("model exploded" in r["error"] for r in rows)  # kept
    assert "stopping" in capsys.readouterr().err
    fake_model(lambda text: FakeResult("t", finished=False))
    assert cli.main(["extract", "--regex", "t[0-9]", "--input", str(inp), "--output",
                     str(out), "-q", "--retry-errors"]) == 0
    assert all("max_new_tokens" in r["error"] for r in _lines(out))


def test_extract_interrupted_keeps_written_rows(tmp_path: Path, fake_model: Any) -> None:
    inp = _write(tmp_path / "in.txt", "a\nb\nc\n")
    out = tmp_path / "out.jsonl"

    def answer(text: str) -> Any:
        if text.endswith("c"):
            raise KeyboardInterrupt
        return text[-1]

    fake_model(answer)
    assert cli.main(["extract", "--regex", "[a-z]", "--input", str(inp), "--output",
                     str(out), "-q", "--batch-size", "1"]) == 130
    assert [r["id"] for r in _lines(out)] == [1, 2]


def test_extract_in_batches_keeps_order_and_isolates_failures(tmp_path: Path,
                                                              fake_model: Any) -> None:
    inp = _write(tmp_path / "in.txt", "a\nb\nc\nd\ne\n")
    out = tmp_path / "out.jsonl"
    calls = fake_model(lambda text: RuntimeError("boom") if text.endswith("c") else text[-1])
    assert cli.main(["extract", "--regex", "[a-z]", "--input", str(inp), "--output",
                     str(out), "-q", "--batch-size", "2"]) == 0
    rows = _lines(out)
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r.get("output") for r in rows] == ["a", "b", None, None, "e"]
    assert "boom" in rows[2]["error"] and "boom" in rows[3]["error"]  # c's batch-mate too
    assert len(calls) == 4  # the fake batch stopped at c


def test_done_ids_repairs_a_cut_last_line(tmp_path: Path) -> None:
    out = _write(tmp_path / "o.jsonl", '{"id": 1, "output": 1}\n{"id": 2, "outp')
    assert done_ids(out) == {"1"}
    assert out.read_text() == '{"id": 1, "output": 1}\n'
    out.write_text('{"id": 1, "output": 1}')  # complete but no final newline
    assert done_ids(out) == {"1"} and out.read_text().endswith("\n")
    out.write_text('{"id": 1, "error": "x", "raw": ""}\n{"id": "b", "output": 2}\n')
    assert done_ids(out, retry_errors=True) == {'"b"'}
    assert out.read_text() == '{"id": "b", "output": 2}\n'


def test_read_records_plain_text_and_jsonl() -> None:
    records = read_records(DATA / "contacts.jsonl")
    assert len(records) == 8 and records[0].id == 1 and "Maria Lopez" in records[0].text
    assert all(r.problem is None for r in records)


def test_extract_with_json_schema(tmp_path: Path, fake_model: Any) -> None:
    pytest.importorskip("constrain.json_schema")
    good = {"name": "Maria Lopez", "email": "maria.lopez@acmerobotics.com",
            "phone": "+1 415 555 0132", "company": "Acme Robotics"}
    bad = {**good, "email": "not an email"}
    fake_model(lambda text: json.dumps(good if "Maria" in text else bad))
    out = tmp_path / "out.jsonl"
    assert cli.main(["extract", "--schema", str(DATA / "contact.schema.json"), "--input",
                     str(DATA / "contacts.jsonl"), "--output", str(out), "-q",
                     "--limit", "2"]) == 0
    rows = _lines(out)
    assert rows[0]["output"] == good
    assert rows[1]["error"].startswith("at $.email") and json.loads(rows[1]["raw"]) == bad


# ------------------------------------------------------------------ compile and check


def test_compile_reports_states_and_timing(monkeypatch: pytest.MonkeyPatch, byte_vocab: Any,
                                           capsys: Any) -> None:
    monkeypatch.setattr(cli, "_load_vocab", lambda name: byte_vocab)
    assert cli.main(["compile", "--regex", "[a-c]{2,4}x", "--json", "--walk", "10"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "regex" and report["states_after_walk"] >= 3
    assert report["walk_text"][-1] == "x" and report["walk_accepting"] is True
    assert cli.main(["compile", "--choice", "yes", "no"]) == 0
    assert "choice constraint" in capsys.readouterr().out


def test_compile_names_unsupported_constructs(monkeypatch: pytest.MonkeyPatch,
                                             byte_vocab: Any, capsys: Any) -> None:
    monkeypatch.setattr(cli, "_load_vocab", lambda name: byte_vocab)
    assert cli.main(["compile", "--regex", r"(a)\1"]) == 1
    assert "unsupported regex construct" in capsys.readouterr().out
    assert cli.main(["compile", "--regex", "a(b"]) == 2
    assert "position" in capsys.readouterr().err


def test_compile_lists_every_unsupported_keyword(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 byte_vocab: Any, capsys: Any) -> None:
    pytest.importorskip("constrain.json_schema")
    monkeypatch.setattr(cli, "_load_vocab", lambda name: byte_vocab)
    schema = _write(tmp_path / "s.json", json.dumps({"type": "object", "properties": {
        "a": {"type": "array", "uniqueItems": True, "contains": {"const": 1}},
        "b": {"type": "string", "pattern": "(a)\\1"}}}))
    assert cli.main(["compile", "--schema", str(schema)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("unsupported: keyword 'uniqueItems' at #/properties/a/uniqueItems")
    assert "all 2 keywords" in out and "#/properties/b/pattern" in out


@pytest.mark.parametrize("args, status, expected", [
    (["--regex", "[0-9]+", "--instance", "123"], 0, "accepted"),
    (["--regex", "[0-9]+", "--instance", "12a4"], 1, "rejected at byte 2"),
    (["--regex", "[0-9]{3}", "--instance", "12"], 1, "ends too early at byte 2"),
    (["--choice", "red", "green", "--instance", "blue"], 1, "rejected at byte 0"),
], ids=["regex-ok", "regex-bad", "regex-short", "choice-bad"])
def test_check_text_specs(capsys: Any, args: list[str], status: int, expected: str) -> None:
    assert cli.main(["check", *args]) == status
    assert expected in capsys.readouterr().out


def test_check_json_schema(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("constrain.json_schema")
    schema = str(DATA / "contact.schema.json")
    good = {"name": "Ann", "email": None, "phone": None, "company": None}
    assert cli.main(["check", "--schema", schema, "--instance", json.dumps(good)]) == 0
    assert "valid" in capsys.readouterr().out
    instance = _write(tmp_path / "i.json", json.dumps({**good, "email": "nope"}) + "\n")
    assert cli.main(["check", "--schema", schema, "--instance", str(instance)]) == 1
    out = capsys.readouterr().out
    assert "invalid: at $.email" in out and "not producible" in out
    assert cli.main(["check", "--schema", schema, "--instance", '{"name": 1']) == 1
    assert "not JSON" in capsys.readouterr().out


# ------------------------------------------------------------------ real model


@pytest.mark.model
def test_real_extract_two_records(tmp_path: Path, _model_cache_folder: Path) -> None:  # noqa: F811
    out = tmp_path / "contacts.out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "constrain.cli", "extract", "--schema",
         str(DATA / "contact.schema.json"), "--input", str(DATA / "contacts.jsonl"),
         "--output", str(out), "--limit", "2", "--max-new-tokens", "96",
         "--cache-dir", str(_model_cache_folder)],
        capture_output=True, text=True, timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = _lines(out)
    assert [r["id"] for r in rows] == [1, 2]
    # Every record is kept: a validated output, or an error row with the raw text (a 135M
    # model can degenerate within the token budget); at least one must be a valid record.
    assert all("output" in r or ("error" in r and "raw" in r) for r in rows), rows
    assert any("output" in r for r in rows), rows
    assert "2 records" in proc.stderr and "tokens/s" in proc.stderr


def test_check_with_resources(tmp_path: Path, capsys: Any) -> None:
    """``--resource FILE``: another document a ``$ref`` names, by its ``$id``."""
    pytest.importorskip("constrain.json_schema")
    address = _write(tmp_path / "address.json", json.dumps({
        "$id": "https://example.com/address.json", "type": "object", "required": ["zip"],
        "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}))
    person = _write(tmp_path / "person.json", json.dumps({
        "$id": "https://example.com/person.json", "type": "object",
        "properties": {"home": {"$ref": "address.json"}}}))
    check = ["check", "--schema", str(person), "--resource", str(address), "--instance"]
    assert cli.main([*check, '{"home": {"zip": "12345"}}']) == 0
    assert "valid" in capsys.readouterr().out
    assert cli.main([*check, '{"home": {"zip": "1234"}}']) == 1
    assert "invalid" in capsys.readouterr().out
    # Without it the reference names nothing given: refused, never fetched.
    assert cli.main(["check", "--schema", str(person), "--instance", "{}"]) != 0
    assert "cannot resolve $ref 'address.json'" in capsys.readouterr().err
    nameless = _write(tmp_path / "nameless.json", json.dumps({"type": "string"}))
    assert cli.main(["check", "--schema", str(person), "--resource", str(nameless),
                     "--instance", "{}"]) == cli.EXIT_USAGE
    assert "absolute URI" in capsys.readouterr().err
