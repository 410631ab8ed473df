"""`gridbots web`: serves the play page, the leaderboard and the bot API (flows/web)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()


@app.command()
def web(
    host: Annotated[str, typer.Option(help="Address to bind (127.0.0.1: this machine only).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port.")] = 8000,
    ms: Annotated[
        float, typer.Option(min=1, help="Most thinking time per bot move, whatever a spec asks.")
    ] = 1000.0,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Bot searches at once.")] = 2,
    mlflow_url: Annotated[
        str | None, typer.Option(help="MLflow UI address, for links from the leaderboard.")
    ] = None,
    root: Annotated[
        Path, typer.Option(help="Project folder: the leaderboard reads its evaluation/*/ tables.")
    ] = Path("."),
):
    """The play page (/), the leaderboard (/leaderboard) and the bot API (/docs)."""
    import uvicorn

    from agents.onnx.runtime import stop_spinning
    from flows.web.app import create_app
    from flows.web.bots import Limits

    limits = Limits(ms=ms, default_ms=min(300.0, ms), workers=workers)
    stop_spinning()  # idle model threads would take the CPU the event loop needs
    typer.echo(f"gridbots web on http://{host}:{port}/  (API: http://{host}:{port}/docs)")
    uvicorn.run(create_app(limits, mlflow_url, root), host=host, port=port, log_level="warning")
