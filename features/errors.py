"""Errors of the dataset layer."""

from __future__ import annotations

from engine.protocol import GameError


class DataError(GameError):
    """A dataset problem a user can fix: missing or half-written data, bad generation params.

    A GameError, so the CLI prints it as one line and exits with code 2.
    """
