"""Bots in their own process: the host program engine.isolation's referee talks to (host) and
the user's own bot classes from files (`file:`), built only there (file_agent)."""
