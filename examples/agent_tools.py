"""Tool calling with ``@constrain.tool`` and a ``Toolbox`` on the embedded SmolLM2 model.

Each question goes to the model with the list of tools; the toolbox's single constraint
("pick a tool and its arguments") guarantees the reply is a valid call of one of them,
which is then validated and invoked. Run it with ``python examples/agent_tools.py``
(about half a minute on a laptop CPU; no network, no GPU).
"""

from __future__ import annotations

from typing import Literal

import constrain

RATES_TO_USD = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067}
Currency = Literal["USD", "EUR", "GBP", "JPY"]


@constrain.tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather in a city.

    Args:
        city: Name of the city, e.g. "Paris".
        unit: Temperature unit.
    """
    celsius = 8 + sum(map(ord, city.lower())) % 20  # a stand-in for a weather service
    value = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return f"{value} degrees {unit} and cloudy in {city}"


@constrain.tool
def convert_currency(amount: float, source: Currency, target: Currency) -> str:
    """Convert an amount of money from one currency to another.

    Args:
        amount: How much money, in the source currency.
        source: The currency code to convert from.
        target: The currency code to convert to.
    """
    return f"{amount * RATES_TO_USD[source] / RATES_TO_USD[target]:.2f} {target}"


@constrain.tool
def answer(text: str) -> str:
    """Answer directly, when no other tool is needed.

    Args:
        text: The answer.
    """
    return text


QUESTIONS = [
    "What's the weather like in Tokyo right now?",
    "How much is 250 euros in US dollars?",
    "Say hello to the user.",
]


def main(max_new_tokens: int = 64) -> list[constrain.ToolCall]:
    """Ask each question; print and return the tool calls."""
    toolbox = constrain.Toolbox([get_weather, convert_currency, answer])
    calls = []
    for question in QUESTIONS:
        call = toolbox.choose(question, max_new_tokens=max_new_tokens)
        print(f"Q: {question}\n   -> {call.name}({call.arguments}) = {call.result!r}")
        calls.append(call)
    return calls


if __name__ == "__main__":
    main()
