"""The web face of gridbots: the play page, the leaderboard and the bot API (`gridbots web`)."""
