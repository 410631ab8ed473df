"""People at the terminal: a person's seat (`human`), turn-by-turn play against an agent
(terminal: what `gridbots play` runs) and real-time play with the arrow keys (real_time)."""
