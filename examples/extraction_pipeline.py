"""Programmatic extraction: Pydantic model in, validated objects out, on the embedded model.

Two ways to do it:

1. a ``@constrain.generative`` function (docstring = prompt, return type = output type),
   called per text, which returns a ``Contact`` or raises ``ValidationFailure``;
2. ``constrain.extract.run_extraction``, the engine behind ``constrain extract``: writes a
   resumable JSONL file with one row per text (output or error).

Run it with ``python examples/extraction_pipeline.py`` (CPU only, no network).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

import constrain
from constrain.extract import Record, iter_output, run_extraction


class Contact(BaseModel):
    """A person mentioned in a short text."""

    name: str = Field(min_length=1, max_length=40)
    email: str | None = Field(default=None, max_length=60)
    company: str | None = Field(default=None, max_length=40)


TEXTS = [
    "Hi, I'm Maria Lopez from Acme Robotics; write to maria.lopez@acmerobotics.com.",
    "Please forward the invoice to Tom Becker (tom@northwind.example.com).",
    "Priya Raman, Helix Bio, said she would call back on Monday.",
]


@constrain.generative(max_new_tokens=80)
def extract_contact(text: str) -> Contact:
    """Extract the person's name, e-mail and company from the text as JSON
    (null for anything not mentioned).

    Text: {text}"""


def main(max_new_tokens: int = 80) -> list[Contact]:
    """Extract the contacts of ``TEXTS`` both ways; print and return the first way's."""
    contacts = []
    for text in TEXTS:
        try:
            contact = extract_contact(text)
        except constrain.ValidationFailure as e:  # e.g. the token budget ran out
            print(f"failed: {e}")
            continue
        print(contact.model_dump_json())
        contacts.append(contact)

    records = [Record(i, text) for i, text in enumerate(TEXTS, start=1)]
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "contacts.jsonl"
        stats = run_extraction(Contact, records, output, max_new_tokens=max_new_tokens,
                               progress=False)
        print(stats.summary(output))
        for row in iter_output(output):
            print(row.get("output", row.get("error")))
        # Running again skips the records already in the file: nothing is generated.
        assert run_extraction(Contact, records, output, progress=False).skipped == len(TEXTS)
    return contacts


if __name__ == "__main__":
    main()
