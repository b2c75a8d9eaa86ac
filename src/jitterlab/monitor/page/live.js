// jitterlab monitor serve: the live page. Reads /events (Server-Sent Events, one JSON
// snapshot per update) of this server and of every loopback server named in ?with=HOST:PORT
// (comma separated), one column per channel. Read-only; every value is set as text.
"use strict";

const paused = { on: false };
const columns = new Map();

function fmtCount(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }

function fmtNs(ns) {
  if (ns === null || ns === undefined || !isFinite(ns)) return "–";
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toPrecision(4) + " s";
  if (a >= 1e6) return (ns / 1e6).toPrecision(4) + " ms";
  if (a >= 1e3) return (ns / 1e3).toPrecision(4) + " µs";
  return ns.toFixed(0) + " ns";
}

function fmtShare(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(2) + " %"; }

function cell(row, text, cls, attrs) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) td.dataset[k] = String(v);
  row.appendChild(td);
  return td;
}

function fillBody(table, rows, make) {
  const body = table.querySelector("tbody");
  const fresh = document.createElement("tbody");
  for (const r of rows) fresh.appendChild(make(r));
  body.replaceWith(fresh);
}

function column(key, label) {
  let col = columns.get(key);
  if (col) return col;
  const node = document.getElementById("channel-template").content.firstElementChild.cloneNode(true);
  node.dataset.source = key;
  node.querySelector(".server").textContent = label;
  document.getElementById("channels").appendChild(node);
  col = { node, alertKey: "" };
  columns.set(key, col);
  return col;
}

function draw(canvas, snap) {
  if (canvas.clientWidth && canvas.width !== canvas.clientWidth) canvas.width = canvas.clientWidth;
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 30;
  ctx.clearRect(0, 0, w, h);
  const bins = snap.timeline.bins;
  ctx.font = "11px sans-serif";
  ctx.fillStyle = "#555";
  if (!bins.length) { ctx.fillText("no samples yet", pad + 4, h / 2); return; }
  const span = 300e9, right = snap.t_server_ns, left = right - span;
  const lo = Math.max(1, Math.min(...bins.map(b => b[2]))), hi = Math.max(...bins.map(b => b[3]), lo * 10);
  const ly = v => h - 14 - (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo) + 1e-12) * (h - 24);
  const lx = t => pad + (t - left) / span * (w - pad - 4);
  ctx.setLineDash([4, 3]);
  for (const c of snap.categories.slice(1)) {  // category separators, in the category's colour (core/palette.py)
    const y = ly(c.above_ns);
    ctx.strokeStyle = c.colour;
    if (c.above_ns <= hi) { ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w, y); ctx.stroke(); }
  }
  ctx.setLineDash([]);
  for (const [t0, count, mn, mx, mean, outliers] of bins) {  // min..max per bin: spikes stay
    if (t0 + snap.timeline.bin_ns < left) continue;
    const x = lx(t0), x1 = Math.max(x + 1, lx(t0 + snap.timeline.bin_ns));
    ctx.fillStyle = outliers ? "#b00020" : "#37474f";
    ctx.fillRect(x, ly(mx), Math.max(1, x1 - x - 0.5), Math.max(1, ly(mn) - ly(mx)));
    ctx.fillStyle = "#ffab00";
    ctx.fillRect(x, ly(mean) - 0.5, Math.max(1, x1 - x - 0.5), 1.5);
  }
  ctx.fillStyle = "#555";
  ctx.fillText(fmtNs(hi), 2, 10);
  ctx.fillText(fmtNs(lo), 2, h - 16);
  ctx.fillText("−5 min", pad, h - 2);
  ctx.fillText("now", w - 24, h - 2);
}

function render(key, label, snap) {
  const col = column(key, label);
  const n = col.node;
  n.querySelector(".name").textContent = snap.channel;
  n.querySelector(".run").textContent = snap.run;
  n.querySelector(".baseline").textContent = snap.baseline || "none (not classified)";
  for (const dd of n.querySelectorAll("dd[data-count]")) {
    const v = snap.counts[dd.dataset.count];
    dd.textContent = fmtCount(v);
    dd.dataset.value = String(v);
  }
  n.querySelector(".dropped").classList.toggle("bad", snap.counts.dropped > 0);
  // sample -> page: the newest sample's age when the server sent this, plus the transit
  const lagMs = snap.last_sample_ns === null ? null
    : (snap.t_server_ns - snap.last_sample_ns) / 1e6 + Math.max(0, Date.now() - snap.sent_unix_ms);
  const lagNode = n.querySelector(".lag");
  lagNode.textContent = lagMs === null ? "–"
    : (lagMs < 2000 ? lagMs.toFixed(0) + " ms" : `no new sample for ${(lagMs / 1000).toFixed(0)} s`);
  lagNode.dataset.value = lagMs === null ? "" : String(lagMs);
  n.querySelector(".conf").textContent = (100 * snap.confidence).toFixed(0) + " %";
  fillBody(n.querySelector("table.percentiles"), snap.percentiles, p => {
    const tr = document.createElement("tr");
    tr.dataset.p = String(p.p);
    cell(tr, "p" + p.p, "", {});
    // a level the sample does not resolve (fewer than 10 samples expected beyond it): "≥ low", never a bare value
    const shown = p.resolved ? fmtNs(p.value_ns) : (p.low_ns === null ? "not resolved" : "≥ " + fmtNs(p.low_ns));
    cell(tr, shown, "value", { ns: p.value_ns, resolved: p.resolved });
    const iv = !p.resolved ? "not resolved"
      : (p.low_ns === null ? "−∞" : fmtNs(p.low_ns)) + " … " + (p.high_ns === null ? "∞" : fmtNs(p.high_ns));
    cell(tr, iv, "interval", { low: p.low_ns, high: p.high_ns });
    return tr;
  });
  const total = snap.categories.reduce((a, c) => a + c.count, 0);
  fillBody(n.querySelector("table.categories"), snap.categories, c => {
    const tr = document.createElement("tr");
    const name = cell(tr, c.k === 0 ? "main (0)" : "outliers " + c.k, "", {});
    name.style.borderLeft = `6px solid ${c.colour}`;  // the category's colour, as in every figure
    cell(tr, c.above_ns === null ? "–" : "> " + fmtNs(c.above_ns), "", {});
    cell(tr, fmtCount(c.count), "count", { value: c.count, category: c.k });
    cell(tr, total ? fmtShare(c.count / total) : "–", "", {});
    return tr;
  });
  fillBody(n.querySelector("table.trials"), snap.trials.slice().reverse(), t => {
    const tr = document.createElement("tr");
    tr.dataset.index = String(t.index);
    tr.dataset.trial = t.tag;
    if (t.contaminated) tr.className = "contaminated";
    cell(tr, t.tag + (t.open ? " (running)" : ""), "text", {});
    cell(tr, t.writer, "text", {});
    cell(tr, fmtCount(t.samples), "samples", { value: t.samples });
    cell(tr, fmtShare(t.outlier_share), "", {});
    cell(tr, fmtNs(t.max_ns), "", { ns: t.max_ns });
    const verdict = t.contaminated === null ? "not screened" : (t.contaminated ? "CONTAMINATED" : "clean");
    cell(tr, verdict, "verdict " + (t.contaminated ? "contaminated" : "clean"), { verdict });
    cell(tr, t.reason || "", "text", {});
    return tr;
  });
  fillBody(n.querySelector("table.writers"), snap.writers, wr => {
    const tr = document.createElement("tr");
    cell(tr, wr.name, "text", {});
    cell(tr, fmtCount(wr.samples), "", { value: wr.samples });
    cell(tr, wr.idle_s < 2 ? "now" : wr.idle_s.toFixed(0) + " s ago", "", {});
    return tr;
  });
  const bins = snap.timeline.bins;
  const maxNs = bins.length ? Math.max(...bins.map(b => b[3])) : null;
  n.querySelector(".timeline-text").textContent = bins.length
    ? `Shown: ${bins.length} bins of ${snap.timeline.bin_ns / 1e9} s (min to max of each bin; red: bins with outliers); largest ${fmtNs(maxNs)}.`
    : "No samples yet.";
  draw(n.querySelector("canvas"), snap);
  const alert = n.querySelector(".alert");
  const a = snap.alert;
  const alertKey = a ? `${a.index}` : "";
  if (alertKey !== col.alertKey) {  // changed only when it changes: a screen reader says it once
    col.alertKey = alertKey;
    alert.classList.toggle("on", !!a);
    alert.textContent = "";
    if (a) {
      alert.append(`Trial ${a.trial} is CONTAMINATED — repeat it.`);
      const why = document.createElement("small");
      why.textContent = `${snap.channel}, writer ${a.writer}: ${a.reason}`;
      alert.appendChild(why);
    }
  }
  const conn = n.querySelector(".conn");
  conn.textContent = "live";
  conn.classList.remove("lost");
  summarize();
}

function summarize() {
  const alerts = [...columns.values()].filter(c => c.alertKey).length;
  document.getElementById("summary").textContent =
    `${columns.size} channel${columns.size === 1 ? "" : "s"}` + (alerts ? ` · ${alerts} contaminated trial running` : "");
}

function connect(key, url, label) {
  const source = new EventSource(url);
  source.onmessage = ev => {
    if (paused.on) return;
    render(key, label, JSON.parse(ev.data));
  };
  source.onerror = () => {
    const col = columns.get(key);
    if (col) {
      const conn = col.node.querySelector(".conn");
      conn.textContent = "connection lost, retrying";
      conn.classList.add("lost");
    }
  };
}

function start() {
  connect("self", "/events", "(this server)");
  const extra = new URLSearchParams(location.search).get("with");
  for (const hostPort of (extra || "").split(",").map(s => s.trim()).filter(Boolean)) {
    if (!/^[A-Za-z0-9.\-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(hostPort)) continue;
    connect(hostPort, `http://${hostPort}/events`, hostPort);
  }
  const button = document.getElementById("pause");
  button.addEventListener("click", () => {
    paused.on = !paused.on;
    button.setAttribute("aria-pressed", String(paused.on));
    button.textContent = paused.on ? "Resume updates" : "Pause updates";
  });
}

start();
