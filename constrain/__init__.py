"""constrain: structured output for language models."""
