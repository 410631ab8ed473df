// gridbots leaderboard: one row per game (its strongest production bot, its floor evidence and
// card); then every registered model, its versions, aliases, promotion evidence and standing in
// its game's pipeline tournament (rejected versions folded); then each tournament's table.
"use strict";

const fixed = (x, digits) => (x === null || x === undefined ? "" : x.toFixed(digits));
// an Elo difference; null is infinite (a score of 0 or 1), its sign that of `side`
const eloText = (x, side) => (x === null || x === undefined
  ? (side > 0 ? "+inf" : "-inf") : `${x >= 0 ? "+" : ""}${x.toFixed(0)}`);
const scoreText = (s, low, high) => `${fixed(s, 3)} [${fixed(low, 3)}, ${fixed(high, 3)}]`;
const eloRange = (e, low, high, score) => `${eloText(e, score - 0.5)} [${eloText(low, -1)}, ${eloText(high, 1)}]`;

function standingText(t) {
  // a version's place in its game's pipeline tournament
  const box = document.createElement("div");
  box.textContent = `#${t.rank} of ${t.of}: ${scoreText(t.score, t.score_low, t.score_high)}, `
    + `Elo ${eloRange(t.elo, t.elo_low, t.elo_high, t.score)} over ${t.games} (${t.game}, as ${t.label})`;
  return box;
}

function cell(row, content) {
  const td = document.createElement("td");
  if (content instanceof Node) td.append(content); else td.textContent = content ?? "";
  row.append(td);
  return td;
}

const KEY_METRICS = /^(held_out_|optimal_rate)/; // shown; the rest folds away

function evaluation(metrics) {
  const text = (entries) => entries.map(([k, x]) => `${k} ${Number(x).toPrecision(3)}`).join(", ");
  const entries = Object.entries(metrics);
  const shown = entries.filter(([k]) => KEY_METRICS.test(k));
  const rest = entries.filter(([k]) => !KEY_METRICS.test(k));
  const box = document.createElement("div");
  box.textContent = text(shown);
  if (rest.length) {
    const more = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = `${rest.length} more`;
    more.append(summary, text(rest));
    box.append(more);
  }
  return box;
}

function cardLink(card) {
  // a zoo bot's card (card.md), served at /zoo/GAME/NAME
  if (!card) return "";
  const link = document.createElement("a");
  link.href = `/zoo/${card}`;
  link.textContent = `zoo card ${card}`;
  return link;
}

function floorText(bot) {
  if (bot.floor === null || bot.floor === undefined) return "no evidence recorded";
  return `${fixed(bot.floor, 3)} (lower 95%): ${bot.floor_evidence}`;
}

function playLink(game, spec, text) {
  const play = document.createElement("a");
  play.href = `/?game=${encodeURIComponent(game)}&opponent=${encodeURIComponent(spec)}`;
  play.textContent = text;
  return play;
}

function gamesTable(games) {
  // one row per game: the production bot the game offers first (strongest recorded evidence)
  const table = document.createElement("table");
  table.className = "board-list";
  table.id = "production";
  table.innerHTML = "<thead><tr><th>game</th><th>production bot</th><th>floor evidence</th>"
    + "<th>card</th><th>also in production</th></tr></thead>";
  const body = document.createElement("tbody");
  for (const g of games) {
    const [best, ...rest] = g.bots;
    const row = document.createElement("tr");
    cell(row, g.game);
    const who = document.createElement("span");
    who.append(`${best.name} v${best.version} `, playLink(g.game, best.spec, "play it"));
    cell(row, who);
    cell(row, floorText(best) + (best.rests_on_card ? " (rests on a zoo card)" : ""));
    cell(row, cardLink(best.card));
    if (rest.length) {
      const more = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = `${rest.length} more`;
      more.append(summary, ...rest.map((b) => {
        const line = document.createElement("div");
        line.textContent = `${b.name} v${b.version}: ${floorText(b)}`;
        return line;
      }));
      cell(row, more);
    } else {
      cell(row, "");
    }
    body.append(row);
  }
  table.append(body);
  return table;
}

function zooText(z) {
  // the gate's second match, against the game's zoo bot (met after clearing the first)
  const score = z.interval ? scoreText(z.score, z.interval[0], z.interval[1]) : "";
  return `${z.opponent}: ${z.wdl} of ${z.games} games, ${score}, ${z.result}`;
}

function modelTable(model) {
  const section = document.createElement("section");
  const title = document.createElement("h3");
  title.textContent = model.name;
  const play = document.createElement("a");
  const game = model.name.split("-")[0];
  play.href = `/?game=${encodeURIComponent(game)}&opponent=${encodeURIComponent(`registry:${model.name}@production`)}`;
  play.textContent = "play its production bot";
  if (model.production) title.append(" ", play);
  section.append(title);
  const wrap = document.createElement("div");
  wrap.className = "scroll";
  const table = document.createElement("table");
  table.className = "board-list";
  const head = "<thead><tr><th>version</th><th>aliases</th><th>decision</th><th>score [95%]</th>"
    + "<th>Elo [95%]</th><th>W/D/L</th><th>against</th><th>tournament: rank, score, Elo [95%]</th>"
    + "<th>evaluation</th><th>run</th><th>created</th></tr></thead>";
  table.innerHTML = head;
  const body = document.createElement("tbody");
  // rejected versions fold beneath the table (<details>), the rest stay in view
  const folded = document.createElement("table");
  folded.className = "board-list rejected";
  folded.innerHTML = head;
  const foldedBody = document.createElement("tbody");
  folded.append(foldedBody);
  for (const v of model.versions) {
    const row = document.createElement("tr");
    cell(row, v.version);
    const aliases = document.createElement("span");
    for (const alias of v.aliases) {
      const tag = document.createElement("span");
      tag.className = `alias ${alias}`;
      tag.textContent = alias;
      aliases.append(tag);
    }
    cell(row, aliases);
    cell(row, v.decision || "not gated");
    const gated = v.score !== null && v.interval;
    cell(row, gated ? scoreText(v.score, v.interval[0], v.interval[1]) : "");
    cell(row, gated ? eloRange(v.elo, v.elo_interval[0], v.elo_interval[1], v.score) : "");
    cell(row, v.wdl ? `${v.wdl} of ${v.games}` : "");
    cell(row, v.zoo ? `${v.opponent}; then the zoo bot ${zooText(v.zoo)}` : v.opponent);
    cell(row, v.tournament ? standingText(v.tournament) : "not in a tournament").className = "standing";
    cell(row, evaluation(v.evaluation));
    if (v.run_url) {
      const link = document.createElement("a");
      link.href = v.run_url;
      link.textContent = "MLflow";
      cell(row, link);
    } else {
      cell(row, v.run_id ? v.run_id.slice(0, 8) : "");
    }
    cell(row, v.created);
    (v.decision === "rejected" ? foldedBody : body).append(row);
  }
  table.append(body);
  wrap.append(table);
  if (foldedBody.children.length) {
    const more = document.createElement("details");
    const summary = document.createElement("summary");
    const n = foldedBody.children.length;
    summary.textContent = `${n} rejected version${n === 1 ? "" : "s"}`;
    more.append(summary, folded);
    wrap.append(more);
  }
  section.append(wrap);
  if (model.production && model.production.card) {
    const card = document.createElement("p");
    card.append("Production version imported from ", cardLink(model.production.card));
    section.append(card);
  }
  return section;
}

function tournamentTable(t) {
  // a pipeline tournament's standings: every bot (registered or baseline), pooled over its games
  const section = document.createElement("section");
  const title = document.createElement("h3");
  title.textContent = `${t.game}: ${t.format || "tournament"}, ${t.games_per_pairing} games per pairing`;
  const source = document.createElement("p");
  source.className = "keys";
  source.textContent = `${t.file} (seed ${t.seed}, written ${t.written}); score and Elo pool every `
    + "game a bot played, against the field; a draw counts half";
  const wrap = document.createElement("div");
  wrap.className = "scroll";
  const table = document.createElement("table");
  table.className = "board-list tournament";
  table.innerHTML = "<thead><tr><th>#</th><th>bot</th><th>registry</th><th>score [95%]</th>"
    + "<th>Elo vs field [95%]</th><th>W/D/L</th><th>pairings (score [95%])</th></tr></thead>";
  const body = document.createElement("tbody");
  for (const s of t.standings) {
    const row = document.createElement("tr");
    cell(row, s.rank);
    cell(row, s.label);
    cell(row, s.model ? `${s.model} v${s.version}` : "");
    cell(row, scoreText(s.score, s.score_low, s.score_high));
    cell(row, eloRange(s.elo, s.elo_low, s.elo_high, s.score));
    cell(row, `${s.wins}/${s.draws}/${s.losses}`);
    cell(row, s.pairings.map((p) => `vs ${p.opponent} ${scoreText(p.score, p.score_low, p.score_high)}`).join("; "));
    body.append(row);
  }
  table.append(body);
  wrap.append(table);
  section.append(title, source, wrap);
  return section;
}

async function load() {
  const status = document.getElementById("status");
  try {
    const reply = await fetch("/api/leaderboard");
    const board = await reply.json();
    if (!reply.ok) throw new Error(board.error);
    const models = board.models;
    status.textContent = models.length
      ? `${models.length} registered model${models.length === 1 ? "" : "s"}`
      : "no registered models yet: `make demo` (or `gridbots repro`) trains and registers them";
    if (board.games.length) document.getElementById("games").append(gamesTable(board.games));
    document.getElementById("models").append(...models.map(modelTable));
    document.getElementById("tournaments").append(...board.tournaments.map(tournamentTable));
    document.getElementById("no-tournaments").hidden = board.tournaments.length > 0;
  } catch (error) {
    status.textContent = error.message;
  }
}

load();
