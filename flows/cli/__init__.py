"""The `gridbots` command line: one root Typer app (app.py) adding each command group."""
