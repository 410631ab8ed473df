// gridbots play page: a person against a bot, turn-based games. The server keeps the game
// (dice and bot replies included); this page sends moves and draws what comes back.
"use strict";

const $ = (id) => document.getElementById(id);
let games = {};
let current = null; // the server's view of the game
let cursor = [0, 0]; // keyboard position on the board
const linked = new URLSearchParams(location.search); // ?game=&opponent=&side=&history=
let startFrom = linked.get("history") || ""; // the first game may start from a linked position
let clock = null; // real-time games: one lap per tick
let pendingArrow = ""; // the arrow pressed since the last lap
let lapInFlight = false;

function stopClock() {
  if (clock !== null) clearInterval(clock);
  clock = null;
}

async function tick() {
  if (lapInFlight || !current || !current.real_time) return;
  lapInFlight = true;
  const arrow = pendingArrow;
  pendingArrow = "";
  try {
    current = await api(`/api/games/${current.id}/lap`, { arrow });
    draw();
  } catch (error) { say(error.message); stopClock(); }
  lapInFlight = false;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const reply = await fetch(path, init);
  const data = await reply.json();
  if (!reply.ok) throw new Error(data.error || reply.statusText);
  return data;
}

function say(text) { $("status").textContent = text; }

async function loadGames() {
  const list = await api("/api/games");
  const select = $("game");
  for (const game of list) {
    games[game.name] = game;
    const option = document.createElement("option");
    option.value = game.name;
    option.textContent = game.name;
    select.append(option);
  }
  const wanted = linked.get("game");
  if (wanted && games[wanted]) select.value = wanted;
  if (linked.get("side")) $("side").value = linked.get("side");
  if (linked.get("params")) $("params").value = linked.get("params");
  if (linked.get("pace")) $("pace").value = linked.get("pace");
  await loadBots();
}

function gameSpec() {
  const params = $("params").value.trim();
  return params ? `${$("game").value}:${params}` : $("game").value;
}

async function loadBots() {
  const name = $("game").value;
  const game = games[name];
  $("params").placeholder = Object.entries(game.params).map(([k, v]) => `${k}=${v}`).join(",");
  $("pace").parentElement.hidden = !game.real_time; // laps/s: real-time games only
  const bots = await api(`/api/bots?game=${encodeURIComponent(name)}`);
  const list = $("bots");
  list.replaceChildren();
  const specs = [...bots.registry.map((b) => b.spec), game.default_opponent,
    "alphabeta:ms=300", "mcts:ms=300", "random"];
  for (const spec of new Set(specs)) {
    const option = document.createElement("option");
    option.value = spec;
    list.append(option);
  }
  const production = bots.registry.find((b) => b.alias === "production");
  const wanted = linked.get("opponent");
  $("opponent").value = wanted || (production ? production.spec : game.default_opponent);
}

async function newGame(event) {
  if (event) event.preventDefault();
  stopClock();
  say("starting…");
  try {
    current = await api(`/api/${encodeURIComponent(gameSpec())}/games`, {
      spec: $("opponent").value, side: Number($("side").value), history: startFrom,
    });
    startFrom = "";
    cursor = [0, 0];
    draw();
    if (current.real_time) {
      const pace = Math.min(Math.max(Number($("pace").value) || 2, 0.5), 10);
      clock = setInterval(tick, 1000 / pace);
    }
  } catch (error) { say(error.message); }
}

async function play(move) {
  if (!current || !current.your_move) return;
  say(`you play ${move}; the bot is thinking…`);
  try {
    current = await api(`/api/games/${current.id}/move`, { move });
    draw();
  } catch (error) { say(error.message); }
}

async function undo() {
  if (!current || !current.can_undo) return;
  try {
    current = await api(`/api/games/${current.id}/undo`, {});
    draw();
  } catch (error) { say(error.message); }
}

function moveAt(row, col) {
  return current.legal.find((m) => m.cells.some(([r, c]) => r === row && c === col));
}

function heat(analysis) {
  // each analysed move's cells: tinted by its value for the bot (green good, red bad), else
  // by its policy share; labelled with the share or the value
  const out = new Map();
  if (!analysis || !analysis.cells) return out;
  for (const [move, cells] of Object.entries(analysis.cells)) {
    const value = analysis.values[move];
    const share = analysis.policy[move];
    let color = null;
    if (value !== undefined && value !== null) {
      const strength = Math.min(Math.abs(value), 1) * 0.7 + 0.1;
      color = value >= 0 ? `rgba(26,127,55,${strength})` : `rgba(207,34,46,${strength})`;
    } else if (share !== undefined) {
      color = `rgba(31,111,235,${0.1 + 0.8 * share})`;
    }
    const label = share !== undefined ? `${Math.round(100 * share)}%`
      : value !== undefined && value !== null ? value.toFixed(2) : "";
    const top = cells.reduce((a, b) => (a[0] <= b[0] ? a : b)); // one label per move
    for (const [r, c] of cells) {
      out.set(`${r},${c}`, { color, label: r === top[0] && c === top[1] ? label : "", move });
    }
  }
  return out;
}

function drawGrid() {
  const grid = $("grid");
  grid.replaceChildren();
  if (!current.grid) { grid.hidden = true; return; }
  grid.hidden = false;
  grid.className = `grid ${current.game.split(":")[0]}`;
  const rows = current.grid.length;
  const cols = current.grid[0].length;
  grid.style.gridTemplateColumns = `repeat(${cols}, 1fr)`;
  const tint = current.your_move || current.result ? heat(current.analysis) : new Map();
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const cell = document.createElement("button");
      const piece = current.grid[r][c];
      const move = current.your_move ? moveAt(r, c) : null;
      cell.className = `cell ${"XO".includes(piece) ? piece : ""}${move ? " legal" : ""}`;
      cell.dataset.piece = piece;
      const board = current.game.split(":")[0];
      const shown = board === "lazerbike" ? /[A-Da-d]/ : board === "sokoban" ? /[0-9]/ : null;
      if (shown && shown.test(piece)) cell.textContent = piece; // bikes, Sokoban players
      cell.dataset.row = r;
      cell.dataset.col = c;
      cell.tabIndex = r === cursor[0] && c === cursor[1] ? 0 : -1;
      cell.setAttribute("aria-label", `${piece === "." ? "empty" : piece}${move ? `, plays ${move.move}` : ""}`);
      const shade = tint.get(`${r},${c}`);
      if (shade && piece === ".") {
        const layer = document.createElement("span");
        layer.className = "heat";
        layer.style.background = shade.color;
        const label = document.createElement("span");
        label.className = "label";
        label.textContent = shade.label;
        cell.append(layer, label);
      }
      cell.addEventListener("click", () => {
        cursor = [r, c];
        const chosen = moveAt(r, c);
        if (chosen) play(chosen.move);
      });
      grid.append(cell);
    }
  }
}

function drawAnalysis() {
  const body = $("analysis").querySelector("tbody");
  body.replaceChildren();
  const a = current.analysis;
  if (!a) { $("summary").textContent = "no bot move yet"; return; }
  const facts = [`played ${a.move}`];
  if (a.value !== null) facts.push(`value ${a.value >= 0 ? "+" : ""}${a.value.toFixed(2)} for the bot`);
  facts.push(`${(1000 * a.seconds).toFixed(0)} ms`);
  for (const [key, value] of Object.entries(a.extra)) {
    if (["number", "string"].includes(typeof value)) facts.push(`${key} ${value}`);
  }
  $("summary").textContent = facts.join(", ");
  const moves = new Set([...Object.keys(a.values), ...Object.keys(a.policy), ...Object.keys(a.ends)]);
  const rank = (m) => (a.ends[m] !== undefined ? (a.ends[m] > 0 ? 10 - a.ends[m] / 1000 : -10) : 0)
    + (a.values[m] ?? 0) + (a.policy[m] ?? 0) / 10;
  for (const move of [...moves].sort((x, y) => rank(y) - rank(x))) {
    const row = document.createElement("tr");
    if (move === a.move) row.className = "chosen";
    const share = a.policy[move];
    const value = a.values[move];
    const end = a.ends[move];
    row.innerHTML = `<td>${move}</td><td class="bar"></td><td></td><td></td>`;
    if (share !== undefined) {
      const fill = document.createElement("div");
      fill.className = "fill";
      fill.style.width = `${(100 * share).toFixed(1)}%`;
      fill.title = `${(100 * share).toFixed(1)}%`;
      row.children[1].append(fill);
    }
    if (value !== undefined && value !== null) {
      row.children[2].textContent = `${value >= 0 ? "+" : ""}${value.toFixed(2)}`;
      row.children[2].className = value >= 0 ? "pos" : "neg";
    }
    if (end !== undefined) row.children[3].textContent = end > 0 ? `wins in ${end}` : `loses in ${-end}`;
    body.append(row);
  }
}

function draw() {
  drawGrid();
  $("board").textContent = current.board;
  $("board").hidden = Boolean(current.grid);
  const moves = $("moves");
  moves.replaceChildren();
  for (const m of current.legal) {
    const button = document.createElement("button");
    button.textContent = m.move;
    button.addEventListener("click", () => play(m.move));
    moves.append(button);
  }
  $("undo").disabled = !current.can_undo;
  const history = $("history");
  history.replaceChildren();
  for (const ply of current.plies) {
    const item = document.createElement("li");
    item.textContent = ply.move;
    item.className = ply.by;
    item.title = ply.by;
    history.append(item);
  }
  drawAnalysis();
  const result = $("result");
  result.hidden = current.result === null;
  if (current.result !== null) {
    stopClock();
    result.textContent = `${current.result}`;
    say(`game over: ${current.result} (history ${current.history})`);
  } else if (current.real_time) {
    say(`you are ${current.you.join(", ")}: steer with the arrows (against ${current.spec})`);
  } else if (current.your_move) {
    const mates = games[current.game.split(":")[0]]?.kind === "puzzle" ? "with" : "against";
    say(`your move (${current.you.join(", ")}) ${mates} ${current.spec}`);
  }
}

function onKey(event) {
  if (event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
  if (event.key === "u") { undo(); return; }
  if (event.key === "n") { newGame(); return; }
  const arrows = { ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right" };
  if (current && current.real_time && arrows[event.key]) {
    event.preventDefault();
    pendingArrow = arrows[event.key]; // taken at the next lap
    return;
  }
  const walks = { ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right", " ": "stay" };
  const walk = current && current.legal.find((m) => m.move === walks[event.key]);
  if (walk) { event.preventDefault(); play(walk.move); return; } // moves named by arrows
  if (!current || !current.grid || !event.target.classList.contains("cell")) return;
  const steps = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  const step = steps[event.key];
  if (!step) return;
  event.preventDefault();
  const rows = current.grid.length;
  const cols = current.grid[0].length;
  cursor = [(cursor[0] + step[0] + rows) % rows, (cursor[1] + step[1] + cols) % cols];
  const target = $("grid").querySelector(`[data-row="${cursor[0]}"][data-col="${cursor[1]}"]`);
  for (const cell of $("grid").children) cell.tabIndex = -1;
  target.tabIndex = 0;
  target.focus();
}

$("setup").addEventListener("submit", newGame);
$("game").addEventListener("change", () => { $("params").value = ""; loadBots(); });
$("typed").addEventListener("submit", (event) => {
  event.preventDefault();
  const move = $("move").value.trim();
  $("move").value = "";
  if (move) play(move);
});
$("undo").addEventListener("click", undo);
document.addEventListener("keydown", onKey);
loadGames().then(() => newGame()).catch((error) => say(error.message));
