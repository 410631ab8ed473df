"""The bot host: runs one agent in its own process for engine.isolation's referee.

    python -m agents.isolated.host SPEC

Reads JSON lines on stdin (see engine/isolation.py), rebuilds the position from the game spec,
scenario and history (`game.state_from_history`; only the new actions when the history extends
the last one), and writes one integer per move on fd 1. Python's `sys.stdout` is pointed at
stderr so a bot's debug prints cannot corrupt the protocol. Any exception in the agent ends the
process (the referee counts a crash and plays random moves for it).

Before any bot code runs, `guard_files` adds an audit hook that refuses to open for writing,
create, rename or delete anything outside the bot's folder (the referee's GRIDBOTS_SANDBOX),
except numba writing its own cache. It is a Python-level guard, not an OS sandbox: code that
calls the C library directly (ctypes, a C extension) is not stopped by it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

import numpy as np

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = {"os.remove": 1, "os.rmdir": 1, "os.mkdir": 1, "os.chmod": 1, "os.chown": 1,
               "os.truncate": 1, "os.utime": 1, "os.rename": 2, "os.link": 2, "os.symlink": 2,
               "shutil.rmtree": 1, "shutil.move": 2, "shutil.copyfile": 2}  # fmt: skip


def _numba_caching() -> bool:
    """Whether numba's cache code is the one writing (it keeps its cache in __pycache__)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == "numba.core.caching":
            return True
        frame = frame.f_back
    return False


def guard_files(folder: str) -> None:
    """Refuses every write outside `folder` for the rest of this process's life."""
    home = os.path.realpath(folder)

    def allowed(path: Any) -> bool:
        if isinstance(path, int):  # an already open descriptor
            return True
        real = os.path.realpath(os.fsdecode(path))
        if real == os.devnull or real == home or real.startswith(home + os.sep):
            return True
        return "__pycache__" in real.split(os.sep) and _numba_caching()

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writing = bool(flags & WRITE_FLAGS) or any(c in (mode or "") for c in "wax+")
            paths = [path] if writing and path is not None else []
        elif event in PATH_EVENTS:
            paths = [a for a in args[: PATH_EVENTS[event]] if a is not None]
        else:
            return
        for path in paths:
            if not allowed(path):
                raise PermissionError(f"bot sandbox: writing to {os.fsdecode(path)} is refused")

    sys.addaudithook(hook)


def command() -> list[str]:
    """The argv prefix the referee starts (the bot spec is appended)."""
    return [sys.executable, "-m", "agents.isolated.host"]


class Host:
    def __init__(self, spec: str):
        import agents.isolated.file_agent as file_agent
        from engine import parse_game_spec

        file_agent.ISOLATED = True
        self.spec = spec
        self.make = file_agent.make_agent
        self.parse_game_spec = parse_game_spec
        self.games: dict[str, Any] = {}
        self.agent = None
        self.state = None

    def begin(self, message: dict[str, Any]) -> None:
        spec = str(message["game"])
        if spec not in self.games:
            self.games[spec] = self.parse_game_spec(spec)
        self.game = self.games[spec]
        self.seed = message.get("seed")
        self.scenario = dict(message.get("scenario") or {})
        self.agent = self.make(self.spec, self.game, int(message.get("agent_seed", 0)))
        self.state = None
        # load every kernel now (numba's first calls), so the first move is not late for it
        trial = self.position([]).clone()
        trial.play_random_opening(4, np.random.default_rng(0))

    def position(self, history: list[int]):
        """The state after `history`, replaying only what is new since the last request."""
        state = self.state
        if state is None or state.history() != history[: len(state.history())]:
            state = self.game.state_from_history([], self.seed, **self.scenario)
        state.apply_history(history[len(state.history()) :])
        self.state = state
        return state

    def move(self, message: dict[str, Any]) -> int:
        state = self.position([int(a) for a in message["history"]])
        return int(self.agent.step(state.clone(), int(message["player"])))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m agents.isolated.host SPEC", file=sys.stderr)
        return 2
    protocol = sys.stdout.buffer
    sys.stdout = sys.stderr
    try:
        host = Host(args[0])
        if os.environ.get("GRIDBOTS_SANDBOX"):  # set by engine.isolation for every bot
            guard_files(os.environ["GRIDBOTS_SANDBOX"])
        for raw in sys.stdin.buffer:
            message = json.loads(raw)
            op = message.get("op")
            if op == "bye":
                break
            if op == "game":
                host.begin(message)
                reply = "ok"
            elif op == "move":
                reply = str(host.move(message))
            else:
                raise ValueError(f"unknown request {op!r}")
            protocol.write(reply.encode() + b"\n")
            protocol.flush()
    except Exception:  # the bot's own failure: report it, die alone
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
