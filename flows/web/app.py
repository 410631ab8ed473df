"""`gridbots web`: the play page, the leaderboard and the bot API, one FastAPI app.

Searches run on a bounded thread pool, never on the event loop, so a slow bot does not stall
other clients; more waiting requests than `Limits.pending` get 429. Every refusal is a 4xx JSON
`{"error": "..."}` naming the problem. The pages are static files shipped in the package
(flows/web/static): no build step, nothing fetched from the internet. `/zoo/GAME/NAME` shows a
zoo entry's card.md (the leaderboard links each zoo bot to it).
"""

from __future__ import annotations

import asyncio
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from engine.protocol import GameError, IllegalActionError
from flows.web.bots import (
    ALLOWED,
    BotPools,
    Limits,
    WebError,
    answer,
    checked_spec,
    registry_exists,
)
from flows.web.leaderboard import leaderboard as leaderboard_data
from flows.web.leaderboard import registry_models
from flows.web.sessions import Sessions, view

STATIC = Path(__file__).parent / "static"


class MoveRequest(BaseModel):
    history: str = Field("", description="The moves so far, in the game's own notation.")
    spec: str = Field(..., description="A bot: registry:NAME@ALIAS or an allow-listed built-in.")
    seed: int = Field(0, description="Scenario seed (games with seeded scenarios).")
    scenario: dict[str, int | str] = Field(default_factory=dict)
    player: int | None = Field(None, description="Simultaneous games: answer for this player.")


class StartRequest(BaseModel):
    spec: str = Field(..., description="The opponent: registry:NAME@ALIAS or a built-in.")
    side: int = Field(0, description="Your seat: 0 moves first.")
    seed: int | None = None
    scenario: dict[str, int | str] = Field(default_factory=dict)
    history: str = Field("", description="Start from this position (the game's notation).")


class PlayRequest(BaseModel):
    move: str = Field("", description="Your move in the game's notation.")
    action: int | None = Field(None, description="Or its action id (the `legal` list's).")


class LapRequest(BaseModel):
    arrow: str = Field("", description="up, down, left, right, or empty: no key this lap.")


def create_app(
    limits: Limits | None = None, mlflow_url: str | None = None, root: Path | str = "."
) -> FastAPI:
    """The app; `root` is the project folder whose pipeline tournaments the leaderboard reads
    (evaluation/<game>/summary.json)."""
    limits = limits or Limits()
    pools = BotPools(limits)
    sessions = Sessions(pools)
    pool = ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="gridbots-bot")
    busy = [0]  # requests on or waiting for the pool (changed only on the event loop)
    app = FastAPI(
        title="gridbots bot API",
        description="Play the registry's bots: one move per request, or a game on the page.",
    )
    app.state.limits = limits

    async def off_loop(function, *args):
        if busy[0] >= limits.workers + limits.pending:
            raise WebError(429, "the server is busy; try again shortly")
        busy[0] += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, function, *args)
        finally:
            busy[0] -= 1

    @app.exception_handler(WebError)
    async def _refused(_request: Request, error: WebError):
        return JSONResponse({"error": str(error)}, status_code=error.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, error: RequestValidationError):
        return JSONResponse({"error": _validation_text(error)}, status_code=422)

    @app.exception_handler(Exception)
    async def _failed(_request: Request, error: Exception):  # a bug: said in one line
        return JSONResponse(
            {"error": f"internal error: {type(error).__name__}: {error}"}, status_code=500
        )

    @app.get("/api/games")
    def games() -> list[dict[str, Any]]:
        """Every registered game, its metadata and the opponent the page offers first."""
        from engine import game_names, load_game

        out = []
        for name in game_names():
            game = load_game(name)
            out.append(
                {
                    **game.metadata(),
                    "default_opponent": game.default_opponent,
                    "real_time": game.real_time,
                }
            )
        return out

    @app.get("/api/bots")
    def bots(game: str | None = None) -> dict[str, Any]:
        """The built-in agents served (with the options a client may set) and the registry's
        models with their aliases: any of them is a `spec` for the move API."""
        return {
            "builtin": {
                name: sorted(keys) if keys is not None else "the game's own options"
                for name, keys in ALLOWED.items()
                if name != "registry"
            },
            "ms_cap": limits.ms,
            "registry": _registry_bots(game),
            "default": _default_bot(game),
        }

    @app.get("/api/leaderboard")
    def leaderboard() -> dict[str, Any]:
        """Every registered model: its versions, aliases, promotion evidence, MLflow run and
        its standing in the pipeline's tournament of its game; and each tournament's table."""
        return leaderboard_data(Path(root), mlflow_url)

    @app.post("/api/{game}/move")
    async def move(game: str, body: MoveRequest) -> dict[str, Any]:
        """The bot's move after `history` (the game's notation), with its analysis."""
        g = _load_game(game)
        spec, _ = checked_spec(body.spec, limits)
        state = _state(g, body.history, body.seed, body.scenario)

        def run():
            with pools.agent(g, spec) as agent:
                return answer(g, state, agent, body.player)

        found = await off_loop(run)
        return {"game": g.spec(), "spec": spec, "history": g.format_moves(state.history()), **found}

    @app.post("/api/{game}/games")
    async def start(game: str, body: StartRequest) -> dict[str, Any]:
        """A new game on the page against `spec` (the server keeps it, capped)."""
        g = _load_game(game)
        spec, _ = checked_spec(body.spec, limits)
        seed = random.randrange(1_000_000) if body.seed is None else body.seed
        session = await off_loop(
            sessions.start, g, spec, body.side, seed, dict(body.scenario), body.history
        )
        return view(session)

    @app.get("/api/games/{session_id}")
    def show(session_id: str) -> dict[str, Any]:
        return view(sessions.get(session_id))

    @app.post("/api/games/{session_id}/move")
    async def play(session_id: str, body: PlayRequest) -> dict[str, Any]:
        """Your move; the answer holds the bot's reply (and the dice) too."""
        session = sessions.get(session_id)
        await off_loop(sessions.play, session, body.move, body.action)
        return view(session)

    @app.post("/api/games/{session_id}/lap")
    async def lap(session_id: str, body: LapRequest) -> dict[str, Any]:
        """One lap of a real-time game (Lazerbike): your arrow key, the bots' moves."""
        session = sessions.get(session_id)
        await off_loop(sessions.lap, session, body.arrow)
        return view(session)

    @app.post("/api/games/{session_id}/undo")
    def undo(session_id: str) -> dict[str, Any]:
        session = sessions.get(session_id)
        sessions.undo(session)
        return view(session)

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC / "play.html")

    @app.get("/leaderboard", include_in_schema=False)
    def leaderboard_page():
        return FileResponse(STATIC / "leaderboard.html")

    @app.get("/zoo/{game}/{name}", include_in_schema=False)
    def zoo_card(game: str, name: str):
        """A zoo entry's card (card.md): what the leaderboard links a zoo bot to."""
        card = _zoo_card(Path(root), game, name)  # Markdown, shown as text by any browser
        return FileResponse(card, media_type="text/plain; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.router.on_shutdown.append(lambda: pool.shutdown(wait=False, cancel_futures=True))
    return BodyLimit(app, limits.body_bytes)


def _load_game(name: str):
    from engine import parse_game_spec

    if any(mark in name for mark in ("/", "\\", ".txt")):  # a level file: never over HTTP
        raise WebError(400, f"{name!r}: game parameters naming files are refused over HTTP")

    try:
        return parse_game_spec(name)
    except (GameError, ValueError, KeyError) as error:
        raise WebError(404, str(error)) from None


def _state(game, history: str, seed: int, scenario: dict):
    try:
        return game.state_from_history(game.parse_moves(history), seed=seed, **scenario)
    except IllegalActionError as error:
        raise WebError(422, str(error)) from None
    except (GameError, ValueError, TypeError) as error:
        raise WebError(422, f"history {history!r}: {error}") from None


def _validation_text(error: RequestValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(x) for x in item.get("loc", ()) if x != "body") or "body"
        if item.get("type") == "json_invalid":
            parts.append(f"the body is not valid JSON ({item.get('ctx', {}).get('error', '')})")
        else:
            parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _zoo_card(root: Path, game: str, name: str) -> Path:
    """card.md of zoo entry GAME/NAME under `root`'s zoo/, else the checkout's; 404 if none."""
    from models.zoo import CARD_MD, CHECKOUT_ZOO

    if not all(part and all(c.isalnum() or c in "-_" for c in part) for part in (game, name)):
        raise WebError(400, "a zoo entry is zoo/GAME/NAME (letters, digits, - and _)")
    for zoo_root in (root / "zoo", CHECKOUT_ZOO):
        if (zoo_root / game / name / CARD_MD).is_file():
            return zoo_root / game / name / CARD_MD
    raise WebError(404, f"no zoo entry {game}/{name}")


def _default_bot(game: str | None) -> str | None:
    """The spec a game's page and API offer first: its strongest production bot by recorded
    evidence (models.registry.production_bots), else the game's built-in opponent."""
    if not game:
        return None
    from models.registry import production_bots

    builtin = _load_game(game).default_opponent
    bots = production_bots(game) if registry_exists() else []
    return bots[0]["spec"] if bots else builtin


def _registry_bots(game: str | None) -> list[dict[str, Any]]:
    out = []
    for model in registry_models():
        if game and not model["name"].startswith(f"{game.split(':', 1)[0]}-"):
            continue
        for alias, version in sorted(model["aliases"].items()):
            out.append(
                {"spec": f"registry:{model['name']}@{alias}", "name": model["name"],
                 "alias": alias, "version": version}
            )  # fmt: skip
    return out


class BodyLimit:
    """Refuses request bodies over `limit` bytes with 413, declared or streamed."""

    def __init__(self, app: FastAPI, limit: int):
        self.app, self.limit = app, limit
        self.state = app.state

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await _too_large(send, self.limit)
        received, over = 0, False

        async def limited():
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # the app sees an empty end; its answer is replaced
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def watch(message):
            if not over:
                await send(message)
            elif message["type"] == "http.response.start":
                await _too_large(send, self.limit)

        await self.app(scope, limited, watch)


async def _too_large(send, limit: int) -> None:
    body = json.dumps({"error": f"request body over {limit} bytes"}).encode()
    await send(
        {"type": "http.response.start", "status": 413,
         "headers": [(b"content-type", b"application/json")]}
    )  # fmt: skip
    await send({"type": "http.response.body", "body": body})
