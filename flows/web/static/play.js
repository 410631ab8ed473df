// gridbots play page: a person against a bot, turn-based games. The server keeps the game
// (dice and bot replies included); this page sends moves and draws what comes back.
"use strict";

const $ = (id) => document.getElementById(id);
let games = {};
let current = null; // the server's view of the game
let cursor = [0, 0]; // keyboard position on the board
let picked = null; // {cell, moves, aimed}: a click that picked several moves (the menu)
const linked = new URLSearchParams(location.search); // ?game=&opponent=&side=&history=&seed=
let startFrom = linked.get("history") || ""; // the first game may start from a linked position
let startSeed = linked.get("seed"); // ... and with a linked scenario seed (dice, line-ups)
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
  const wanted = linked.get("opponent"); // else the strongest production bot (/api/bots)
  $("opponent").value = wanted || bots.default || game.default_opponent;
}

async function newGame(event) {
  if (event) event.preventDefault();
  stopClock();
  say("starting…");
  try {
    const seed = startSeed === null ? {} : { seed: Number(startSeed) };
    current = await api(`/api/${encodeURIComponent(gameSpec())}/games`, {
      spec: $("opponent").value, side: Number($("side").value), history: startFrom, ...seed,
    });
    startFrom = "";
    startSeed = null;
    cursor = [0, 0];
    draw();
    if (current.real_time) {
      const pace = Math.min(Math.max(Number($("pace").value) || 2, 0.5), 10);
      clock = setInterval(tick, 1000 / pace);
    }
  } catch (error) { say(error.message); }
}

async function play(move, action) {
  // a move picked from the legal list goes by its action id (some notations do not read back)
  if (!current || !current.your_move) return;
  say(`you play ${move}; the bot is thinking…`);
  try {
    const body = action === undefined ? { move } : { action };
    current = await api(`/api/games/${current.id}/move`, body);
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

function movesAt(row, col) {
  return current.legal.filter((m) => m.cells.some(([r, c]) => r === row && c === col));
}

const same = (a, b) => Boolean(a && b) && a[0] === b[0] && a[1] === b[1];

function clickCell(row, col) {
  // one move here: play it; several: pick them (a second click on a lit target narrows them,
  // the menu names the rest); a click elsewhere starts over
  cursor = [row, col];
  const aimed = picked && !picked.aimed ? picked.moves.filter((m) => same(m.target, [row, col])) : [];
  if (aimed.length) choose(aimed, picked.cell, true);
  else choose(movesAt(row, col), [row, col], false);
}

function choose(moves, cell, aimed) {
  if (moves.length === 1) { picked = null; play(moves[0].move, moves[0].action); return; }
  picked = moves.length ? { cell, moves, aimed } : null;
  drawGrid();
  drawMenu();
  // keyboard: on to the menu when it lists moves, else back to the cell (arrows reach targets)
  const first = $("menu").querySelector("button[data-move]");
  if (first) first.focus(); else focusCursor();
}

function focusCursor() {
  const target = $("grid").querySelector(`[data-row="${cursor[0]}"][data-col="${cursor[1]}"]`);
  if (!target) return;
  for (const cell of $("grid").children) cell.tabIndex = -1;
  target.tabIndex = 0;
  target.focus();
}

function drawMenu() {
  // the moves a click picked that the board cannot tell apart (tactics' cards on a cell,
  // territory's troop counts): one button each
  const menu = $("menu");
  menu.replaceChildren();
  menu.hidden = !picked;
  if (!picked) return;
  const listed = picked.aimed ? picked.moves : picked.moves.filter((m) => !m.target);
  const title = document.createElement("span");
  const lit = picked.moves.length - listed.length;
  title.textContent = `${picked.moves.length} moves here${lit ? "; or click a lit target" : ""}:`;
  menu.append(title);
  for (const m of listed) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = m.ends_turn ? `end turn (${m.move})` : m.move;
    button.dataset.move = m.move;
    button.addEventListener("click", () => { picked = null; play(m.move, m.action); });
    menu.append(button);
  }
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = "cancel (Esc)";
  cancel.addEventListener("click", () => { picked = null; drawGrid(); drawMenu(); });
  menu.append(cancel);
}

function heat(analysis) {
  // per cell, over the analysed moves on it: the best value for the bot (green good, red bad)
  // or else the summed policy share (blue); labelled once per move, on its topmost cell
  const out = new Map();
  if (!analysis || !analysis.cells) return out;
  for (const [move, cells] of Object.entries(analysis.cells)) {
    const value = analysis.values[move];
    const share = analysis.policy[move];
    const top = cells.reduce((a, b) => (a[0] <= b[0] ? a : b));
    for (const [r, c] of cells) {
      const key = `${r},${c}`;
      const cell = out.get(key) || { share: null, value: null, labelled: false };
      if (share !== undefined) cell.share = (cell.share ?? 0) + share;
      if (value !== undefined && value !== null) cell.value = Math.max(cell.value ?? -Infinity, value);
      cell.labelled ||= r === top[0] && c === top[1];
      out.set(key, cell);
    }
  }
  for (const cell of out.values()) {
    if (cell.value !== null) {
      const strength = Math.min(Math.abs(cell.value), 1) * 0.7 + 0.1;
      cell.color = cell.value >= 0 ? `rgba(26,127,55,${strength})` : `rgba(207,34,46,${strength})`;
    } else if (cell.share !== null) {
      cell.color = `rgba(31,111,235,${0.1 + 0.8 * Math.min(cell.share, 1)})`;
    }
    const label = cell.share !== null ? `${Math.round(100 * cell.share)}%`
      : cell.value !== null ? cell.value.toFixed(2) : "";
    cell.label = cell.labelled ? label : "";
  }
  return out;
}

function span(className, text) {
  const part = document.createElement("span");
  part.className = className;
  if (text) part.textContent = text;
  return part;
}

function drawGrid() {
  // the game's own picture (`grid`, `grid_labels`, `grid_style` from the server): no game names
  const grid = $("grid");
  grid.replaceChildren();
  if (!current.grid) { grid.hidden = true; return; }
  grid.hidden = false;
  const style = current.grid_style || {};
  const shape = style.cell || "square";
  const hex = shape === "hex"; // each row half a cell right of the one above
  grid.className = `grid shape-${shape}`;
  grid.style.background = style.background || "";
  grid.style.gap = `${style.gap ?? 2}px`;
  const rows = current.grid.length;
  const cols = current.grid[0].length;
  grid.style.gridTemplateColumns = `repeat(${hex ? 2 * cols + rows - 1 : cols}, 1fr)`;
  const tint = current.your_move || current.result ? heat(current.analysis) : new Map();
  const lit = picked && !picked.aimed ? picked.moves.filter((m) => m.target).map((m) => m.target) : [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const cell = document.createElement("button");
      const piece = current.grid[r][c];
      const kind = (style.pieces || {})[piece];
      const moves = current.your_move ? movesAt(r, c) : [];
      const target = lit.some((t) => same(t, [r, c]));
      cell.className = `cell${moves.length ? " legal" : ""}${target ? " target" : ""}`
        + `${picked && same(picked.cell, [r, c]) ? " picked" : ""}${kind && kind.letter ? " lettered" : ""}`
        + `${current.grid_labels && current.grid_labels[r][c] ? " counted" : ""}`;
      if (hex) cell.style.gridColumn = `${r + 2 * c + 1} / span 2`;
      cell.style.background = kind && !kind.disc ? kind.color : style.empty || "";
      if (style.ink) cell.style.color = style.ink;
      cell.dataset.piece = piece;
      cell.dataset.row = r;
      cell.dataset.col = c;
      cell.tabIndex = r === cursor[0] && c === cursor[1] ? 0 : -1;
      const count = current.grid_labels ? current.grid_labels[r][c] : "";
      const what = kind ? kind.name || piece : "empty";
      const plays = moves.length === 1 ? `, plays ${moves[0].move}` : moves.length ? `, ${moves.length} moves` : "";
      cell.setAttribute("aria-label", `${what}${count ? ` ${count}` : ""}${plays}${target ? ", target" : ""}`);
      const shade = tint.get(`${r},${c}`);
      if (shade && shade.color) {
        const layer = span("heat");
        layer.style.background = shade.color;
        cell.append(layer);
      }
      if (kind && kind.disc) {
        const disc = span("disc");
        disc.style.background = kind.color;
        cell.append(disc);
      }
      if (kind && kind.letter) cell.append(span("letter", piece));
      if (count) cell.append(span("count", count));
      if (shade && shade.label) cell.append(span("label", shade.label));
      cell.addEventListener("click", () => clickCell(r, c));
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
  picked = null;
  drawGrid();
  drawMenu();
  $("board").textContent = current.board;
  $("board").hidden = Boolean(current.grid);
  const moves = $("moves");
  moves.replaceChildren();
  const few = current.legal.length <= 12; // else only moves off the board, and End Turn
  for (const m of current.legal.filter((x) => few || !x.cells.length || x.ends_turn)) {
    const button = document.createElement("button");
    button.textContent = m.ends_turn ? `end turn (${m.move})` : m.move;
    button.addEventListener("click", () => play(m.move, m.action));
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
  if (event.key === "Escape" && picked) { picked = null; drawGrid(); drawMenu(); return; }
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
  if (walk) { event.preventDefault(); play(walk.move, walk.action); return; } // moves named by arrows
  if (!current || !current.grid || !event.target.classList.contains("cell")) return;
  const steps = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  const step = steps[event.key];
  if (!step) return;
  event.preventDefault();
  const rows = current.grid.length;
  const cols = current.grid[0].length;
  cursor = [(cursor[0] + step[0] + rows) % rows, (cursor[1] + step[1] + cols) % cols];
  focusCursor();
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
