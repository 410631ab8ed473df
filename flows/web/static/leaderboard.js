// gridbots leaderboard: every registered model, its versions, aliases and promotion evidence.
"use strict";

const fixed = (x, digits) => (x === null || x === undefined ? "" : x.toFixed(digits));

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
  table.innerHTML = "<thead><tr><th>version</th><th>aliases</th><th>decision</th><th>score [95%]</th>"
    + "<th>Elo [95%]</th><th>W/D/L</th><th>against</th><th>evaluation</th><th>run</th><th>created</th></tr></thead>";
  const body = document.createElement("tbody");
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
    cell(row, v.score === null ? "" : `${fixed(v.score, 3)} [${fixed(v.interval[0], 3)}, ${fixed(v.interval[1], 3)}]`);
    cell(row, v.elo === null ? "" : `${fixed(v.elo, 0)} [${fixed(v.elo_interval[0], 0)}, ${fixed(v.elo_interval[1], 0)}]`);
    cell(row, v.wdl ? `${v.wdl} of ${v.games}` : "");
    cell(row, v.opponent);
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
    body.append(row);
  }
  table.append(body);
  wrap.append(table);
  section.append(wrap);
  return section;
}

async function load() {
  const status = document.getElementById("status");
  try {
    const reply = await fetch("/api/leaderboard");
    const models = await reply.json();
    if (!reply.ok) throw new Error(models.error);
    status.textContent = models.length
      ? `${models.length} registered model${models.length === 1 ? "" : "s"}`
      : "no registered models yet: `make demo` (or `gridbots repro`) trains and registers them";
    document.getElementById("models").append(...models.map(modelTable));
  } catch (error) {
    status.textContent = error.message;
  }
}

load();
