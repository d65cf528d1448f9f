"""How much of a client's text an answer repeats: error details never echo a huge SQL text or name."""

from __future__ import annotations

MAX_DETAIL = 2000


def shorten(text: str, limit: int = MAX_DETAIL) -> str:
    """`text`, cut to `limit` characters with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"
