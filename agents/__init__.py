"""Decision makers: `make(spec, game)` builds an agent from a spec string such as `random`."""

from agents.base import Agent, AgentError, make, make_seats, parse_spec

__all__ = ["Agent", "AgentError", "make", "make_seats", "parse_spec"]
