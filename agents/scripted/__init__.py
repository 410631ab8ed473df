"""Agents that follow fixed rules rather than search or learning: uniform random play (with the
tactical guards of agents.guards), each game's own heuristic and the path-finding survival agent."""
