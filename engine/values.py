"""Plain values a user hands the engine: an action id, and a game parameter written as text.

Apart from engine.protocol so that notation and protocol share one definition without reaching
into each other's private names.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def is_int(value: Any) -> bool:
    """An integer action id (numpy's included), never a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def coerce_text(value: Any, default: Any) -> Any:
    """Text from a game spec (`players=4`) as the type of the parameter's default; anything
    else unchanged. ValueError names what the text should have been."""
    if not isinstance(value, str) or isinstance(default, str) or default is None:
        return value
    kind = type(default)
    if kind is bool:
        truth = {"true": True, "1": True, "false": False, "0": False}.get(value.lower())
        if truth is None:
            raise ValueError(kind.__name__)
        return truth
    try:
        return kind(value)
    except ValueError:
        raise ValueError(kind.__name__) from None
