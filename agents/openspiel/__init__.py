"""The bridge to OpenSpiel (the optional `peers` extra): its bots as gridbots agents
(`openspiel:`, agent) and gridbots agents as `pyspiel.Bot`s (bot)."""
