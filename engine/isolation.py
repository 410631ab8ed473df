"""Process-isolated seats: each bot runs in its own process and talks JSON lines over pipes.

The referee writes one JSON object per line to the bot's stdin and reads the bot's stdout as
plain text: one integer per line answers one request. Nothing from a bot is ever unpickled or
even fully parsed when it misbehaves: reads are non-blocking and capped, lines longer than
`MAX_LINE` are discarded, unsolicited lines are only counted (`bytes.count`), and stderr keeps a
short tail for crash reports; past `LAP_READ_BUDGET` bytes in a lap a bot's pipe is not read
again until the next lap (its writes block, which also stops it eating CPU). So a bot that spams
or floods its pipe costs the referee bounded memory and time, never a late lap.

Requests (referee -> bot):
  {"op": "game", "game": SPEC, "seed": S, "scenario": {...}, "agent_seed": K}   -> "ok"
  {"op": "move", "history": [...], "player": P, "ms": T}                         -> an integer
  {"op": "bye"}
The k-th line a bot writes answers the k-th request; answers to requests whose deadline passed
are recognised by that count and dropped, and a bot is sent no new request while it still owes
one (it is asked once it catches up, else it is late), so requests never pile up. Which
program runs in the child is the caller's choice (`host`: an argv prefix; the bot spec is
appended), so the engine imports no agent.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.protocol import State, after_history, describe_illegal
from engine.sandbox import (
    DEFAULT_CPU_S,
    DEFAULT_MEMORY_MB,
    MARKER,
    discard_process,
    kill_group,
    seal,
)

MAX_LINE = 64  # an answer is a small integer; anything longer is garbage
READ_CHUNK = 65536
LAP_READ_BUDGET = 256 * 1024  # past this, a bot's pipe is left unread until the next lap
STDERR_TAIL = 4096
MAX_PIPE_BYTES = 64 << 20  # what a bot may write to its stdout in one game before it is killed
STARTUP_S = 120.0  # imports and numba cache loads happen before the first "ok"
RESET_S = 10.0  # a process that already played answers a new game within this
#: the only variables a bot inherits (besides the ones the referee sets)
INHERITED_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV")
SOURCE_ROOT = Path(__file__).resolve().parents[1]  # so the host imports this very code
MAX_FAULTS = 20  # fault messages kept per seat and game


@dataclass
class SeatStats:
    """What one seat did in a game (or, merged, in a match): the tournament's per-bot columns."""

    moves: int = 0
    times: list[float] = field(default_factory=list)  # seconds per decision, late ones capped
    illegal: int = 0  # rejected actions: illegal answers plus unsolicited action lines
    late: int = 0
    crashes: int = 0
    discarded_bytes: int = 0  # flooded output thrown away unread
    peak_kb: int = 0
    #: what went wrong, in the game's words (`illegal move 4 for X after "444444": column 4 is
    #: full; ...`), the first MAX_FAULTS of them
    faults: list[str] = field(default_factory=list)

    def merge(self, other: SeatStats) -> None:
        self.moves += other.moves
        self.times.extend(other.times)
        self.illegal += other.illegal
        self.late += other.late
        self.crashes += other.crashes
        self.discarded_bytes += other.discarded_bytes
        self.peak_kb = max(self.peak_kb, other.peak_kb)
        for fault in other.faults:
            self.note(fault)

    def note(self, fault: str) -> None:
        if len(self.faults) < MAX_FAULTS:
            self.faults.append(fault)


class BotProcess:
    """One bot in its own process; reused across the games of a match, respawned after a crash."""

    def __init__(
        self,
        host: Sequence[str],
        spec: str,
        memory_mb: int = DEFAULT_MEMORY_MB,
        env: dict[str, str] | None = None,
        cpu_s: int = DEFAULT_CPU_S,
    ):
        self.argv = [*host, spec]
        self.spec = spec
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        inherited = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        path = os.pathsep.join(filter(None, [str(SOURCE_ROOT), inherited.get("PYTHONPATH")]))
        self.env = {
            **inherited,
            "PYTHONPATH": path,
            "GRIDBOTS_REFEREE_CWD": os.getcwd(),  # relative bot files resolve against it
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.proc: subprocess.Popen | None = None
        self.stats = SeatStats()
        self.stderr_tail = b""
        self.folder: Path | None = None
        self.spare: tuple[subprocess.Popen, Path, str] | None = None  # a replacement, loading
        self.games = 0  # games begun by the current process

    # ---- process life ----------------------------------------------------------------------
    def _spawn(self) -> tuple[subprocess.Popen, Path, str]:
        folder = Path(tempfile.mkdtemp(prefix="gridbots-bot-"))
        marker = uuid.uuid4().hex
        env = {**self.env, "HOME": str(folder), "TMPDIR": str(folder),
               "GRIDBOTS_SANDBOX": str(folder), MARKER: marker}  # fmt: skip
        proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=folder,
            preexec_fn=lambda: seal(self.memory_mb, self.cpu_s),
            start_new_session=True,
            close_fds=True,
        )
        return proc, folder, marker

    def start(self) -> None:
        """A fresh process: the replacement started when the last one was killed (it has been
        loading since), or a new one."""
        self.proc, self.folder, self.marker = self.spare or self._spawn()
        self.spare = None
        self.games = 0
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self.out_fd = self.proc.stdout.fileno()
        self.err_fd = self.proc.stderr.fileno()
        self.in_fd = self.proc.stdin.fileno()
        self.outbuf = b""
        self.partial = b""
        self.discarding = False
        self.owed = 0
        self.pending = False
        self.answer: str | None = None
        self.dead = False
        self.asked = False
        self.answered_at = 0.0
        self.lap_bytes = 0
        self.game_bytes = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and not self.dead and self.proc.poll() is None

    def peak_kb(self) -> int:
        """Peak resident memory of the child (VmHWM), 0 where /proc is not available."""
        if self.proc is None:
            return 0
        try:
            with open(f"/proc/{self.proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def close(self, keep_spare: bool = False) -> None:
        """Asks the bot to leave, then kills its whole group and removes its folder; never
        waits long for a misbehaving one. The loading replacement goes too, unless kept."""
        if not keep_spare and self.spare is not None:
            discard_process(*self.spare)
            self.spare = None
        if self.proc is None:
            return
        if self.alive:
            with contextlib.suppress(OSError):
                os.write(self.in_fd, b'{"op": "bye"}\n')
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=0.5)
        discard_process(self.proc, self.folder, self.marker)
        self.proc, self.folder = None, None

    def _die(self) -> None:
        """Killed for the rest of the game; its replacement starts loading at once."""
        if not self.dead:
            self.dead = True
            self.stats.crashes += 1
            self.pending = False
            kill_group(self.proc, self.marker)
            # its last words (a traceback) may still wait behind a closed stdout, and the match
            # forgets its pipes from now on: read what is there, at most four chunks
            for _ in range(4):
                if self.read_stderr() <= 0:
                    break
            if self.spare is None:
                self.spare = self._spawn()

    # ---- writing ---------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        self.outbuf += (json.dumps(message, separators=(",", ":")) + "\n").encode()
        self.owed += 1
        self.flush()

    def flush(self) -> None:
        while self.outbuf and not self.dead:
            try:
                written = os.write(self.in_fd, self.outbuf)
            except BlockingIOError:
                return
            except OSError:  # broken pipe: the bot is gone
                self._die()
                return
            self.outbuf = self.outbuf[written:]

    # ---- reading ---------------------------------------------------------------------------
    def read_stdout(self) -> None:
        try:
            chunk = os.read(self.out_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._die()
            return
        self.lap_bytes += len(chunk)
        self.game_bytes += len(chunk)
        if self.game_bytes > MAX_PIPE_BYTES:  # a flood past the cap: the bot is done
            self.stats.discarded_bytes += len(chunk)
            self._die()
            return
        position = 0
        while self.owed and position < len(chunk):
            end = chunk.find(b"\n", position)
            if end < 0:
                break
            self._line(chunk[position:end])
            position = end + 1
        rest = chunk[position:]
        lines = rest.count(b"\n")
        if lines:  # nothing is owed: every further line is an unsolicited action, rejected
            last = rest.rfind(b"\n")
            self.stats.illegal += lines - (1 if self.discarding else 0)
            self.stats.discarded_bytes += last + 1
            self.partial, self.discarding = b"", False
            rest = rest[last + 1 :]
        self._keep(rest)

    def _keep(self, tail: bytes) -> None:
        if self.discarding:
            self.stats.discarded_bytes += len(tail)
            return
        self.partial += tail
        if len(self.partial) > MAX_LINE:
            self.stats.discarded_bytes += len(self.partial)
            self.partial, self.discarding = b"", True

    def _line(self, piece: bytes) -> None:
        """One complete line: the answer to the oldest request still owed."""
        if self.discarding:
            line, self.discarding = None, False  # the end of an overlong line: garbage
            self.stats.discarded_bytes += len(piece)
        else:
            line = self.partial + piece
            self.partial = b""
            if len(line) > MAX_LINE:
                self.stats.discarded_bytes += len(line)
                line = None
        self.owed -= 1
        if self.owed == 0 and self.pending:
            self.pending = False
            self.answer = line.decode("ascii", "replace").strip() if line is not None else ""

    def read_stderr(self) -> int:
        """Keeps the last few KiB (crash reports); the bytes read, 0 when none are waiting, -1
        at end of file."""
        try:
            chunk = os.read(self.err_fd, READ_CHUNK)
        except BlockingIOError:
            return 0
        except OSError:
            return -1
        self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        return len(chunk) or -1


class IsolatedPlayers:
    """Asks isolated bots for actions, concurrently and under one deadline per lap.

    Turns every kind of misbehaviour into a legal action: late or crashed -> killed, and random
    legal actions for the rest of the game; illegal -> rejected, counted, and a random legal
    action instead.
    """

    def __init__(self, bots: Sequence[BotProcess], move_ms: float, rng: np.random.Generator):
        self.bots = list(bots)
        self.move_ms = move_ms
        self.rng = rng
        self.selector = selectors.DefaultSelector()
        for bot in self.bots:
            if bot.proc is None or not bot.alive:
                if bot.proc is not None:
                    bot.close(keep_spare=True)
                bot.start()
            self.selector.register(bot.out_fd, selectors.EVENT_READ, (bot, True))
            self.selector.register(bot.err_fd, selectors.EVENT_READ, (bot, False))
        self.muted: set[int] = set()
        self.budget = True

    def close(self) -> None:
        self.selector.close()

    def begin(self, game_spec: str, seed: int | None, scenario: dict, agent_seeds: Sequence[int]):
        """Announces a game; waits (generously) until every bot has built its agent."""
        self._unmute()
        for bot, agent_seed in zip(self.bots, agent_seeds, strict=True):
            bot.stats = SeatStats()
            bot.game_bytes = 0
            bot.games += 1
            bot.send(
                {
                    "op": "game",
                    "game": game_spec,
                    "seed": seed,
                    "scenario": scenario,
                    "agent_seed": int(agent_seed),
                }
            )
        # a fresh process imports and loads its kernels first; one that already played has
        # RESET_S; a bot past its deadline is killed and plays random moves this game
        limits = {id(b): STARTUP_S if b.games == 1 else RESET_S for b in self.bots}
        start = time.perf_counter()

        def settled() -> bool:
            elapsed = time.perf_counter() - start
            for bot in self.bots:
                if bot.owed and not bot.dead and elapsed > limits[id(bot)]:
                    bot.stats.late += 1
                    bot._die()
            return all(b.owed == 0 or b.dead for b in self.bots)

        self.budget = False  # read everything until each "ok": the game cannot start without it
        try:
            self._wait(settled, max(limits.values()) + 0.1, tick=0.05)
        finally:
            self.budget = True

    def ask(self, state: State, players: Sequence[int]) -> dict[int, int]:
        """One lap: every named player's action, legal whatever its bot did.

        A bot still busy with an earlier, expired request is asked as soon as its stale answer
        arrives, with what is left of the lap; so a slow bot never queues requests up.
        """
        history = state.history()
        legal = {p: state.legal_actions(p) for p in players}
        lap = {p: self.bots[p] for p in players if not self.bots[p].dead}
        start = time.perf_counter()
        self._unmute()
        for bot in lap.values():
            bot.asked, bot.pending, bot.answer = False, False, None

        def settled() -> bool:
            now = time.perf_counter()
            for p, bot in lap.items():
                if not bot.asked and bot.owed == 0 and not bot.dead:
                    left = max(1.0, self.move_ms - (now - start) * 1000.0)
                    bot.asked, bot.pending = True, True
                    bot.send({"op": "move", "history": history, "player": p, "ms": left})
            return all(bot.dead or (bot.asked and not bot.pending) for bot in lap.values())

        if lap:
            self._wait(settled, self.move_ms / 1000.0, start)
        actions: dict[int, int] = {}
        for p in players:
            bot = self.bots[p]
            action = None
            if bot.dead:
                pass
            elif bot.pending or not bot.asked:  # missed the lap: killed, random this game
                bot.pending = False
                bot.stats.late += 1
                bot.stats.times.append(self.move_ms / 1000.0)
                bot._die()
                bot.stats.note(late_fault(state, p, self.move_ms))
            else:
                bot.stats.times.append(bot.answered_at - start)
                action = _parse_action(bot.answer)
                if action is None or action not in legal[p]:
                    bot.stats.illegal += 1
                    answer = bot.answer if action is None else action
                    bot.stats.note(describe_illegal(state, answer, p, legal[p]))
                    action = None
            if action is None:
                action = legal[p][int(self.rng.integers(len(legal[p])))]
            else:
                bot.stats.moves += 1
            actions[p] = action
        return actions

    def finish(self, drain_s: float = 0.05) -> list[SeatStats]:
        """Per-seat statistics of the game, after counting what the bots already sent."""
        self._wait(lambda: False, drain_s)
        for bot in self.bots:
            bot.stats.peak_kb = max(bot.stats.peak_kb, bot.peak_kb())
        return [bot.stats for bot in self.bots]

    def _wait(self, done, seconds: float, start: float | None = None, tick: float = 0.0) -> None:
        deadline = (start or time.perf_counter()) + seconds
        while not done():
            for bot in self.bots:
                if bot.outbuf and not bot.dead:
                    bot.flush()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return
            for key, _ in self.selector.select(min(remaining, tick) if tick else remaining):
                bot, is_stdout = key.data
                if bot.dead:
                    self._forget(bot)
                elif is_stdout:
                    was_pending = bot.pending
                    bot.read_stdout()
                    if was_pending and not bot.pending:
                        bot.answered_at = time.perf_counter()
                    if bot.dead:
                        self._forget(bot)
                    elif (
                        self.budget and bot.lap_bytes > LAP_READ_BUDGET
                    ):  # a flood: let its writes block
                        self.selector.unregister(bot.out_fd)
                        self.muted.add(id(bot))
                elif bot.read_stderr() < 0:
                    with contextlib.suppress(KeyError, ValueError):
                        self.selector.unregister(bot.err_fd)

    def _unmute(self) -> None:
        for bot in self.bots:
            bot.lap_bytes = 0
            if id(bot) in self.muted and not bot.dead:
                self.selector.register(bot.out_fd, selectors.EVENT_READ, (bot, True))
        self.muted.clear()

    def _forget(self, bot: BotProcess) -> None:
        for fd in (bot.out_fd, bot.err_fd):
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(fd)


def late_fault(state: State, player: int, move_ms: float) -> str:
    """The log line of a missed deadline, in the game's words."""
    who = state.game.player_name(player)
    return f"late: no move for {who}{after_history(state)} within {move_ms:.0f} ms"


def _parse_action(text: str | None) -> int | None:
    if not text or len(text) > MAX_LINE:
        return None
    try:
        return int(text)
    except ValueError:
        return None
