"""End to end on the embedded SmolLM2-135M-Instruct (CPU): ~20 schemas, one batch each way.

Each schema gets a prompt (the extraction CLI's, which shows the schema); the whole set runs
as ONE batch with a different schema per row, greedy, then sampled, then unconstrained.
Every constrained output that finished must parse and validate with ``jsonschema``
(formats checked); the same prompts unconstrained must show a lower validity rate.

The MaskBench (JSONSchemaBench) cases are read from the workspace's ``shared/data`` folder
beside the repository when it is there (the data is not redistributed with the package).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from model_support import _model_cache_folder  # noqa: F401

from constrain.api import validate_instance
from constrain.errors import ValidationFailure
from constrain.extract import build_prompt

pytestmark = [pytest.mark.model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
MASKBENCH = ROOT.parent / "shared" / "data" / "jsonschemabench"
MAX_NEW_TOKENS = 96

_S = {"type": "string", "maxLength": 30}


def _obj(required: bool = True, **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "additionalProperties": False,
            **({"required": list(props)} if required else {})}


#: (name, schema, text): written for this test, bounded so that 96 tokens always suffice.
OWN_CASES: list[tuple[str, Any, str]] = [
    ("contact", json.loads((ROOT / "examples/data/contact.schema.json").read_text()),
     "Hi, I'm Maria Lopez from Acme Robotics, maria.lopez@acmerobotics.com."),
    ("sentiment", _obj(sentiment={"enum": ["positive", "negative", "neutral"]},
                       confidence={"type": "number", "minimum": 0, "maximum": 1}),
     "The battery life is fantastic and the screen is gorgeous."),
    ("weather_call", _obj(location=_S, unit={"enum": ["celsius", "fahrenheit"]}),
     "What's the weather in Lisbon in celsius?"),
    ("event", _obj(title=_S, date={"type": "string", "format": "date"},
                   attendees={"type": "array", "items": {"type": "string", "maxLength": 15},
                              "maxItems": 3}),
     "Team lunch with Ana and Raj on 2024-05-17."),
    ("product", _obj(name=_S, price={"type": "number", "minimum": 0},
                     in_stock={"type": "boolean"}),
     "The X100 headphones cost $89.99 and are currently available."),
    ("int_list", {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100},
                  "minItems": 1, "maxItems": 5},
     "The scores were 12, 45 and 78."),
    ("color_enum", {"enum": ["red", "green", "blue"]}, "The sky on a clear day."),
    ("nested_address", _obj(name=_S, address=_obj(city=_S, country=_S)),
     "Kenji lives in Osaka, Japan."),
    ("nullable", _obj(nickname={"type": ["string", "null"], "maxLength": 20},
                      age={"type": ["integer", "null"], "minimum": 0, "maximum": 130}),
     "Robert, whom everyone calls Bob, is 42."),
    ("pattern", _obj(code={"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"}),
     "Flight code ABC-123 departs at noon."),
    ("any_of", {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 10}]},
     "How many legs does a spider have?"),
    ("yes_no_reason", _obj(answer={"type": "boolean"},
                           reason={"type": "string", "maxLength": 40}),
     "Is water wet?"),
    ("recipe", _obj(title=_S, servings={"type": "integer", "minimum": 1, "maximum": 12},
                    ingredients={"type": "array", "maxItems": 2, "items": _obj(
                        item={"type": "string", "maxLength": 15},
                        grams={"type": "integer", "minimum": 0, "maximum": 1000})}),
     "Pancakes for 4: 200 g flour, 300 g milk."),
    ("date_time", _obj(starts={"type": "string", "format": "date-time"}),
     "The meeting starts on 2024-03-01 at 09:30 UTC."),
]

#: (MaskBench file, text): small schemas from five subsets (strings unbounded there).
MASKBENCH_CASES = [
    ("Glaiveai2K/analyze_social_media_sentiment_6ef0069e.json",
     "Analyze Twitter posts about electric cars from 2024-01-01 to 2024-01-31."),
    ("Glaiveai2K/analyze_stock_market_8b93e3e7.json",
     "Analyze Apple's stock between 2023-01-01 and 2023-06-30."),
    ("Github_trivial/o10018.json", "Request the value stored under the key user_id."),
    ("Github_trivial/o10021.json", "Three items were forgotten."),
    ("Github_easy/o10008.json", "Turn printing in the endpoint on."),
    ("Snowplow/sp_141_Normalized.json", "The user opened the app: event 'app_open'."),
]


Cases = list[tuple[str, Any, str, bool]]


def _cases() -> Cases:
    """(name, schema, text, bounded) for every case available here."""
    cases = [(name, schema, text, True) for name, schema, text in OWN_CASES]
    for file, text in MASKBENCH_CASES:
        path = MASKBENCH / file
        if path.is_file():
            cases.append((f"maskbench/{file}", json.loads(path.read_text())["schema"],
                          text, False))
    return cases


def _valid(schema: Any, text: str) -> bool:
    try:
        validate_instance(schema, json.loads(text))
    except (ValueError, ValidationFailure):
        return False
    return True


def _unfenced(text: str) -> str:
    """Unconstrained replies often wrap JSON in a Markdown fence: be fair, remove it."""
    m = re.fullmatch(r"\s*```(?:json)?\s*(.*?)\s*```\s*", text, re.DOTALL)
    return (m.group(1) if m else text).strip()


def _run(lm: tuple[Any, Any], cases: Cases, constrained: bool, **options: Any) -> list[Any]:
    from constrain.generation import generate_batch

    specs = [schema if constrained else None for _, schema, _, _ in cases]
    prompts = [build_prompt(text, schema) for _, schema, text, _ in cases]
    return generate_batch(specs, prompts, model=lm[0], tokenizer=lm[1],
                          max_new_tokens=MAX_NEW_TOKENS, **options)


def _check_constrained(results: list[Any], cases: Cases) -> None:
    problems = []
    finished = 0
    for (name, schema, _, bounded), r in zip(cases, results):
        if r.finished:
            finished += 1
            if not _valid(schema, r.text):
                problems.append(f"{name}: finished but invalid: {r.text!r}")
        elif bounded:
            problems.append(f"{name}: did not finish in {MAX_NEW_TOKENS} tokens: {r.text!r}")
    assert not problems, "\n".join(problems)
    # Open MaskBench schemas (extra keys allowed, unbounded strings) let SmolLM2 copy the
    # schema shown in the prompt until the budget ends: valid so far, but unfinished.
    assert finished >= 0.6 * len(cases), [r.text for r in results if not r.finished]


@pytest.fixture(scope="module")
def cases() -> Cases:
    pytest.importorskip("constrain.generation")
    return _cases()


@pytest.fixture(scope="module")
def lm(_model_cache_folder: Path) -> tuple[Any, Any]:  # noqa: F811
    from constrain.assets import load_smollm2_model, load_smollm2_tokenizer

    return load_smollm2_model(_model_cache_folder), load_smollm2_tokenizer(_model_cache_folder)


@pytest.fixture(scope="module")
def greedy(lm: tuple[Any, Any], cases: Cases) -> list[Any]:
    """The greedy batch, run once for the two tests that read it."""
    return _run(lm, cases, True, temperature=0.0)


def test_greedy_outputs_parse_and_validate(cases: Cases, greedy: list[Any]) -> None:
    assert len(cases) >= 14
    _check_constrained(greedy, cases)


def test_sampled_outputs_parse_and_validate(lm: tuple[Any, Any], cases: Cases) -> None:
    # The bounded cases only: a batch lasts as long as its longest row, and the open
    # MaskBench schemas would hold this one to the full budget (they ran greedy above).
    bounded = [c for c in cases if c[3]]
    results = _run(lm, bounded, True, temperature=0.8, top_p=0.95, seed=1234)
    _check_constrained(results, bounded)


def test_unconstrained_validity_is_lower(lm: tuple[Any, Any], cases: Cases,
                                        greedy: list[Any]) -> None:
    constrained = sum(r.finished and _valid(c[1], r.text) for c, r in zip(cases, greedy))
    free = _run(lm, cases, False, temperature=0.0)
    unconstrained = sum(_valid(c[1], _unfenced(r.text)) for c, r in zip(cases, free))
    print(f"valid outputs: constrained {constrained}/{len(cases)}, "
          f"unconstrained {unconstrained}/{len(cases)}")
    assert constrained > unconstrained
