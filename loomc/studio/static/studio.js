// loomc Studio. Plain JavaScript, no dependency, nothing fetched from another origin.
// Every piece of model, source or stored text reaches the DOM through textContent (el()'s
// text argument), never as markup. Every number comes from the server's JSON (the IR, the
// checker, the events, the store); a number that is null is shown blank.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const state = { project: null, selected: null, runAbort: null, traces: [], compare: new Set() };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}
const $ = (id) => document.getElementById(id);
const blank = (v) => (v === null || v === undefined ? "" : String(v));
function num(v) {
  if (v === null || v === undefined || v === "") return "";
  const n = Number(v);
  return Number.isFinite(n) && Number.isInteger(n) ? n.toLocaleString("en-US") : String(v);
}
function when(ts) { return ts ? new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19) : ""; }
function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function modelName(p, t) { return t ? `${p}@${t}` : p; }

async function getJSON(url) {
  const r = await fetch(url, { headers: { accept: "application/json" } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || body.error?.message || `${r.status} ${r.statusText}`);
  return body;
}

// ---------------------------------------------------------------- navigation
const TABS = ["pipelines", "run", "traces", "reports"];
function show(tab) {
  if (!TABS.includes(tab)) tab = "pipelines";
  for (const t of TABS) {
    $(`view-${t}`).hidden = t !== tab;
    const link = document.querySelector(`[data-tab="${t}"]`);
    if (t === tab) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  if (tab === "traces") loadTraces();
  if (tab === "reports") loadReports();
}
window.addEventListener("hashchange", () => show(location.hash.slice(1)));

// ---------------------------------------------------------------- 1. pipelines
const NODE_W = 224, NODE_H = 70, GAP_X = 70, GAP_Y = 26, PAD = 14, LIFT = 34;

function drawGraph(p, host, opts) {
  clear(host);
  const cols = Math.max(0, ...p.steps.map((s) => s.column)) + 1;
  const rows = Math.max(0, ...p.steps.map((s) => s.row)) + 1;
  const wide = PAD * 2 + cols * NODE_W + (cols - 1) * GAP_X;
  // a narrow screen draws the same graph top to bottom: dependencies flow downwards
  const vertical = host.clientWidth > 0 && host.clientWidth < wide && rows < cols;
  const pcol = Object.fromEntries(p.steps.map((s) => [s.id, s.column]));
  const long = p.edges.some((e) => Math.abs(pcol[e.to] - pcol[e.from]) > 1);
  const lift = long ? LIFT : 0; // room for the edges that bow around the steps they skip
  const W = vertical ? PAD * 2 + rows * NODE_W + (rows - 1) * GAP_Y + lift : wide;
  const H = vertical ? PAD * 2 + cols * (NODE_H + GAP_X) - GAP_X : PAD * 2 + rows * (NODE_H + GAP_Y) - GAP_Y + lift;
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `graph of ${p.id}: ${p.steps.map((s) => s.id).join(", ")}` });
  const defs = svg("defs");
  for (const k of ["sees", "after", "guard"]) {
    const m = svg("marker", { id: `arrow-${k}-${opts.prefix}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    m.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: `edge ${k}`, fill: k === "sees" ? "#2f5ad6" : k === "guard" ? "#b45309" : "#6b7280" }));
    defs.append(m);
  }
  root.append(defs);
  const pos = {};
  for (const s of p.steps) {
    pos[s.id] = vertical
      ? { x: PAD + s.row * (NODE_W + GAP_Y), y: PAD + s.column * (NODE_H + GAP_X) }
      : { x: PAD + s.column * (NODE_W + GAP_X), y: PAD + lift + s.row * (NODE_H + GAP_Y) };
  }
  for (const e of p.edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    const kind = e.kinds.includes("sees") ? "sees" : e.kinds.includes("guard") ? "guard" : "after";
    // an edge that skips a column bows around the steps between (above, or right when vertical)
    const skips = Math.abs(pcol[e.to] - pcol[e.from]) > 1;
    let d;
    if (vertical && skips) {
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x + NODE_W, y2 = b.y + NODE_H / 2;
      d = `M${x1},${y1} C${x1 + LIFT * 1.6},${y1} ${x2 + LIFT * 1.6},${y2} ${x2 + 2},${y2}`;
    } else if (vertical) {
      const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y, my = (y1 + y2) / 2;
      d = `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2 - 2}`;
    } else if (skips) {
      const x1 = a.x + NODE_W * 0.7, y1 = a.y, x2 = b.x + NODE_W * 0.3, y2 = b.y;
      d = `M${x1},${y1} C${x1},${y1 - LIFT * 1.3} ${x2},${y2 - LIFT * 1.3} ${x2},${y2 - 2}`;
    } else {
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2, mx = (x1 + x2) / 2;
      d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}`;
    }
    const path = svg("path", { d, class: `edge ${kind}`, "marker-end": `url(#arrow-${kind}-${opts.prefix})` });
    path.append(svg("title", {}, `${e.from} → ${e.to}: ${e.kinds.join(", ")}`));
    root.append(path);
  }
  for (const s of p.steps) {
    const g = svg("g", { class: `node${p.answer.includes(s.id) ? " answer" : ""}`, "data-step": s.id, transform: `translate(${pos[s.id].x},${pos[s.id].y})` });
    g.append(svg("rect", { width: NODE_W, height: NODE_H, rx: 7 }));
    g.append(svg("text", { x: 9, y: 17, "font-weight": 700 }, s.id));
    g.append(svg("text", { x: 9, y: 33, class: "sub" }, clip(`${s.role} (${s.worker}) · ${s.model}`, 36)));
    const w = s.worst || {};
    g.append(svg("text", { x: 9, y: 48, class: "sub" }, `≤ ${blank(w.calls)} calls · ≤ ${w.tokens === null || w.tokens === undefined ? "" : num(w.tokens)} tok`));
    if (s.guard_text) g.append(svg("text", { x: 9, y: 63, class: "guardtxt" }, clip(`when ${s.guard_text}`, 38)));
    const tip = [`${s.id}: ${s.role} (${s.worker}) on ${s.model}`];
    if (s.guard_text) tip.push(`when ${s.guard_text}`);
    if (s.sees.length || s.optional_sees.length) tip.push(`sees ${[...s.sees, ...s.optional_sees.map((x) => x + "?")].join(", ")}`);
    g.append(svg("title", {}, tip.join("\n")));
    root.append(g);
  }
  host.append(root);
  return root;
}

function worstRow(cells, cls) {
  return el("tr", { class: cls }, ...cells.map((c, i) => el("td", { class: i >= 1 && i <= 5 ? "num" : i === 8 ? "guard" : null, text: c })));
}

function selectPipeline(id) {
  const p = state.project.pipelines.find((x) => x.id === id);
  if (!p) return;
  state.selected = id;
  $("pick-pipeline").value = id;
  for (const b of document.querySelectorAll("#pipeline-list button")) b.setAttribute("aria-pressed", String(b.dataset.id === id));
  $("graph-title").textContent = `${p.id} — ${p.policy}`;
  const st = clear($("graph-status"));
  st.append(el("span", { class: p.checks ? "pass" : "fail", text: p.checks ? "checks: every ceiling proved" : `does not check: ${p.errors.length} error(s)` }));
  for (const e of p.errors) st.append(el("br"), el("span", { class: "mono", text: `${e.code} ${e.message}` }));
  drawGraph(p, $("graph"), { prefix: "pipe" });
  const body = clear(document.querySelector("#worst-table tbody"));
  for (const s of p.steps) {
    const w = s.worst || {};
    body.append(worstRow([s.id, blank(w.calls), num(w.tokens), blank(w.credits), blank(w.cost), num(w.latency_ms), `${s.role} (${s.worker})`, s.model, s.guard_text || ""]));
  }
  const foot = clear(document.querySelector("#worst-table tfoot"));
  const w = p.worst || {};
  foot.append(worstRow(["worst case", blank(w.calls), num(w.tokens), blank(w.credits), blank(w.cost), num(w.latency_ms), "", "", ""]));
  const c = p.ceilings;
  const over = (a, b) => a !== null && a !== undefined && b !== null && b !== undefined && Number(a) > Number(b);
  const anyOver = ["calls", "tokens", "credits", "cost", "latency_ms"].some((k) => over(w[k], c[k]));
  foot.append(worstRow(["ceiling", blank(c.calls), num(c.tokens), blank(c.credits), blank(c.cost), num(c.latency_ms), "", "", ""], anyOver ? "over" : null));
  if (p.source) showSource(p.source);
}

function sourceLines(text, marks, from, to) {
  const pre = document.createDocumentFragment();
  const lines = text.split("\n");
  const lo = Math.max(1, from), hi = Math.min(lines.length, to);
  for (let n = lo; n <= hi; n++) {
    const line = lines[n - 1];
    const hits = marks.filter((d) => n >= d.line && n <= d.end_line);
    const row = el("span", { class: `line${hits.length ? " hit" : ""}${hits.some((d) => d.severity === "error") ? " error" : ""}`, "data-line": n });
    row.append(el("span", { class: "ln", text: String(n) }));
    if (hits.length) {
      const d = hits[0];
      const a = n === d.line ? d.column - 1 : 0;
      const b = n === d.end_line ? Math.max(a + 1, d.end_column - 1) : line.length;
      row.append(line.slice(0, a), el("mark", { class: "span", title: `${d.code} ${d.message}`, text: line.slice(a, b) || " " }), line.slice(b));
    } else row.append(line);
    pre.append(row);
  }
  return pre;
}

function showSource(name) {
  const sources = state.sources || {};
  const sel = $("pick-source");
  if (![...sel.options].some((o) => o.value === name)) return;
  sel.value = name;
  const text = sources[name];
  const pre = clear($("source"));
  if (text === null || text === undefined) { pre.append("(outside the project folder or too large to show)"); return; }
  const marks = (state.check?.diagnostics || []).filter((d) => d.file === name);
  pre.append(sourceLines(text, marks, 1, text.split("\n").length));
}

function renderCheck(check) {
  state.check = check;
  Object.assign(state.sources, check.sources);
  const s = clear($("check-summary"));
  s.append(el("span", { class: check.errors ? "fail" : "pass", text: `${check.errors} error(s), ${check.warnings} warning(s)` }), ` in ${check.files} file(s)`);
  const list = clear($("diagnostics"));
  for (const d of check.diagnostics) {
    const li = el("li", {});
    li.append(el("span", { class: `sev ${d.severity}`, text: d.severity }), " ", el("code", { text: d.code }), " ", el("span", { text: d.message }));
    li.append(el("div", { class: "mono note", text: `${d.file}:${d.line}:${d.column}` }));
    const text = check.sources[d.file];
    if (text) { const ex = el("div", { class: "excerpt" }); ex.append(sourceLines(text, [d], d.line - 1, d.end_line + 1)); li.append(ex); }
    if (d.hint) li.append(el("div", { class: "note", text: `hint: ${d.hint}` }));
    list.append(li);
  }
  refreshSourcePicker();
  if (state.selected) { const p = state.project.pipelines.find((x) => x.id === state.selected); if (p?.source) showSource(p.source); }
}

function refreshSourcePicker() {
  const sel = clear($("pick-source"));
  for (const name of Object.keys(state.sources).sort()) sel.append(el("option", { value: name, text: name }));
}

// ---------------------------------------------------------------- 2. the run form
function fillRunForm() {
  const names = [...new Set(state.project.pipelines.map((p) => p.name))];
  const pipe = clear($("run-pipeline"));
  for (const n of names) pipe.append(el("option", { value: n, text: n, selected: n === "general" }));
  const types = clear($("byok-type"));
  for (const t of state.project.byok_types) types.append(el("option", { value: t, text: t }));
  pipe.addEventListener("change", fillTiers);
  fillTiers();
}
function fillTiers() {
  const name = $("run-pipeline").value;
  const tiers = state.project.pipelines.filter((p) => p.name === name && p.tier).map((p) => p.tier);
  const sel = clear($("run-tier"));
  if (!tiers.length) sel.append(el("option", { value: "", text: "(no tiers)" }));
  else {
    sel.append(el("option", { value: "auto", text: "auto (risk picks)" }));
    for (const t of tiers) sel.append(el("option", { value: t, text: t, selected: t === state.project.default_tier }));
  }
  const models = [...new Set(state.project.pipelines.filter((p) => p.name === name).flatMap((p) => p.steps.map((s) => s.model)))];
  $("byok-models").value = models.map((m) => `${m} = `).join("\n") + (models.length ? "\n" : "") + "* = ";
}

function runForm() {
  const mode = $("run-mode").value;
  const form = { prompt: $("prompt").value, pipeline: $("run-pipeline").value, tier: $("run-tier").value || null, mode };
  if (mode === "byok") {
    form.byok = { type: $("byok-type").value, base_url: $("byok-url").value, models: $("byok-models").value.split("\n").filter((l) => !/=\s*$/.test(l)).join("\n"), key: $("byok-key").value };
  }
  return form;
}

// ---------------------------------------------------------------- 3. the live trace
const DIMS = [["calls", "calls"], ["tokens", "tokens"], ["credits", "credits"], ["cost", "cost USD"], ["latency_ms", "latency ms"]];

function traceReset(plan) {
  const t = { plan, steps: {}, used: { calls: 0, tokens: 0, credits: null, cost: null, latency_ms: 0 }, started: null, answerText: {} };
  clear($("steps")); clear($("receipt")); clear($("decision")); clear($("budget")); clear($("answer"));
  drawGraph(plan, $("run-graph"), { prefix: "run" });
  for (const s of plan.steps) {
    const li = el("li", { class: "step pending", "data-step": s.id });
    const head = el("div", { class: "head" }, el("span", { class: "sid", text: s.id }), el("span", { class: "meta", text: `${s.role} (${s.worker}) · ${s.model}` }), el("span", { class: "st", text: "waiting" }), el("span", { class: "meta calls", text: "" }));
    li.append(head, el("p", { class: "why", text: s.guard_text ? `when ${s.guard_text}` : "" }), el("pre", { class: "out" }));
    $("steps").append(li);
    t.steps[s.id] = { li, node: $("run-graph").querySelector(`[data-step="${CSS.escape(s.id)}"]`), spec: s, calls: 0 };
  }
  for (const [k, label] of DIMS) {
    const bar = el("div", { class: "bar", "data-dim": k });
    bar.append(el("div", { class: "lbl" }), el("div", { class: "track", role: "meter", "aria-label": label, "aria-valuemin": "0" }, el("div", { class: "fill" })));
    $("budget").append(bar);
  }
  paintBudget(t);
  return t;
}

function paintBudget(t) {
  const c = t.plan.ceilings, w = t.plan.worst || {};
  for (const [k, label] of DIMS) {
    const bar = $("budget").querySelector(`[data-dim="${k}"]`);
    const used = t.used[k], cap = c[k];
    const worstNote = cap === null && w[k] !== null && w[k] !== undefined ? ` (worst case ${num(w[k])})` : "";
    bar.querySelector(".lbl").textContent = `${label}: ${used === null ? "" : num(used)} / ${cap === null ? "no ceiling" : num(cap)}${worstNote}`;
    const track = bar.querySelector(".track");
    const fill = bar.querySelector(".fill");
    const scale = cap !== null ? Number(cap) : (w[k] !== null && w[k] !== undefined ? Number(w[k]) : null);
    const pct = used !== null && scale ? Math.min(100, (100 * Number(used)) / scale) : 0;
    fill.style.width = `${pct}%`;
    if (cap !== null) track.setAttribute("aria-valuemax", String(cap)); else track.removeAttribute("aria-valuemax");
    if (used !== null) track.setAttribute("aria-valuenow", String(used));
    let mark = track.querySelector(".worst");
    if (w[k] !== null && w[k] !== undefined && cap !== null && Number(cap) > 0) {
      if (!mark) { mark = el("div", { class: "worst", title: `checker's worst case ${w[k]}` }); track.append(mark); }
      mark.style.left = `${Math.min(100, (100 * Number(w[k])) / Number(cap))}%`;
    }
  }
}

function setStep(t, id, status, label) {
  const s = t.steps[id];
  if (!s) return;
  s.li.className = `step ${status}`;
  s.li.querySelector(".st").textContent = label;
  if (s.node) s.node.setAttribute("class", `node${t.plan.answer.includes(id) ? " answer" : ""} ${status}`);
}

function onEvent(t, ev) {
  const d = ev.data || {};
  if (ev.kind === "run-started") t.simulated = Boolean(d.simulated);
  if (ev.ts && t.started === null && ev.kind === "run-started") t.started = ev.ts;
  // a simulation's latency is the checker's longest path, shown with its receipt
  if (ev.ts && t.started !== null && !t.simulated) t.used.latency_ms = Math.round((ev.ts - t.started) * 1000);
  const s = ev.step ? t.steps[ev.step] : null;
  switch (ev.kind) {
    case "tier-chosen": {
      const r = d.risk || {};
      $("decision").textContent = `auto picked ${d.tier}: risk ${r.level || ""}${(r.reasons || []).length ? " (" + r.reasons.join("; ") + ")" : ""}`;
      break;
    }
    case "run-started": {
      const r = d.risk;
      if (r && !$("decision").textContent) $("decision").textContent = `risk ${r.level}${(r.reasons || []).length ? " (" + r.reasons.join("; ") + ")" : ""}`;
      break;
    }
    case "step-started":
      if (s) {
        s.calls += 1; t.used.calls += d.simulated ? 0 : 1;
        setStep(t, ev.step, "running", "running");
        s.li.querySelector(".calls").textContent = `call ${s.calls}`;
        if (s.spec.guard_text && !d.simulated) {
          const line = el("span", { text: ` · escalated: ${ev.step} runs (when ${s.spec.guard_text})` });
          $("decision").append(line);
        }
      }
      break;
    case "step-retry":
      if (s) { s.li.querySelector(".out").textContent = ""; s.li.querySelector(".why").textContent = `retry: ${blank(d.reason || d.error)}`; }
      break;
    case "token":
      if (s) {
        s.li.querySelector(".out").textContent += d.text || "";
        t.answerText[ev.step] = (t.answerText[ev.step] || "") + (d.text || "");
        if (t.plan.answer.includes(ev.step)) $("answer").textContent = t.answerText[ev.step];
      }
      break;
    case "step-finished":
      if (s) {
        if (d.simulated) {
          t.used.calls += Number(d.calls || 0);
          if (t.used.tokens !== null) t.used.tokens = d.usage?.total_tokens === null ? null : t.used.tokens + Number(d.usage?.total_tokens || 0);
          setStep(t, ev.step, "simulated", "worst case");
          s.li.querySelector(".calls").textContent = `≤ ${blank(d.calls)} call(s) · ≤ ${num(d.worst?.tokens)} tokens · ≤ ${num(d.worst?.latency_ms)} ms`;
          if (d.guard) s.li.querySelector(".why").textContent = `may run: when ${d.guard}`;
        } else {
          const u = d.usage || {};
          t.used.tokens += Number(u.total_tokens || 0);
          setStep(t, ev.step, d.status === "ok" ? "ok" : "failed", d.status === "ok" ? "done" : blank(d.status));
          s.li.querySelector(".calls").textContent = `${s.calls} call(s) · ${num(u.total_tokens)} tokens · ${num(d.elapsed_ms)} ms`;
          if (d.error) s.li.querySelector(".why").textContent = String(d.error);
        }
      }
      break;
    case "step-skipped":
      if (s) {
        setStep(t, ev.step, "skipped", "skipped");
        s.li.querySelector(".why").textContent = `${blank(d.reason)}${s.spec.guard_text ? ` — guard: when ${s.spec.guard_text}` : ""}`;
      }
      break;
    case "budget-stop":
      if (s) { setStep(t, ev.step, "budget-stopped", "budget stop"); s.li.querySelector(".why").textContent = blank(typeof d.reason === "string" ? d.reason : JSON.stringify(d.reason)); }
      break;
    case "warning":
      $("decision").append(el("span", { class: "error", text: ` · ${blank(d.code)} ${blank(d.message)}` }));
      break;
    case "receipt": receipt(t, d); break;
    case "error": $("run-error").textContent = blank(d.message); break;
  }
  paintBudget(t);
}

function receipt(t, r) {
  const box = clear($("receipt"));
  const dl = el("dl");
  const add = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: blank(v) }));
  if (r.simulated) {
    const w = r.worst || {};
    box.append(el("h4", { text: `Simulated: the checker's worst case for ${modelName(r.pipeline, r.tier)}` }));
    add("calls", w.calls); add("tokens", num(w.tokens)); add("credits", w.credits); add("cost USD", w.cost); add("latency ms", num(w.latency_ms));
    add("provider calls made", 0);
    $("answer").textContent = "(a simulation calls no provider, so there is no answer)";
    t.used = { calls: w.calls, tokens: w.tokens, credits: w.credits, cost: w.cost, latency_ms: w.latency_ms };
  } else {
    const used = r.budget?.used || {};
    t.used = { calls: used.calls ?? r.calls, tokens: used.tokens ?? r.tokens, credits: used.credits ?? null, cost: used.cost ?? null, latency_ms: used.latency_ms ?? r.elapsed_ms };
    box.append(el("h4", { text: `Receipt: ${modelName(r.pipeline, r.tier)} (${r.mode})` }));
    add("stop reason", r.stop_reason);
    add("escalated", r.escalated ? `yes: ${blank(r.escalation_reason)}` : "no");
    add("calls", r.calls); add("tokens", num(r.tokens)); add("credits", r.credits); add("estimated credits", r.estimated_credits);
    add("cost USD", r.cost); add("elapsed ms", num(r.elapsed_ms)); add("receipt hash", r.receipt_hash); add("run id", r.run_id);
    if (r.limited_by) add("limited by", `${r.limited_by.dimension} at ${blank(r.limited_by.step)}`);
    if (r.error) add("error", r.error);
    $("answer").textContent = r.answer || "";
    for (const step of r.steps || []) if (t.steps[step.id] && step.status === "ok") t.steps[step.id].li.querySelector(".out").textContent = step.output || "";
    if (r.escalated && r.escalation_reason) $("decision").append(el("span", { text: ` · escalation reason: ${r.escalation_reason}` }));
  }
  box.append(dl);
}

async function startRun(ev) {
  ev.preventDefault();
  $("run-error").textContent = "";
  const form = runForm();
  if (form.mode === "byok") $("byok-key").value = ""; // the key leaves the page with this request only
  const abort = new AbortController();
  state.runAbort = abort;
  $("run-button").disabled = true; $("stop-button").disabled = false;
  const badge = $("trace-state");
  badge.className = "badge running"; badge.textContent = "running";
  document.querySelector(".answer-area").scrollIntoView({ block: "start" });
  let t = null, failed = false;
  try {
    const r = await fetch("/studio/api/run", { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(form), signal: abort.signal });
    form.byok = undefined;
    if (!r.ok) { const b = await r.json().catch(() => ({})); throw new Error(b.error || `${r.status}`); }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut); buf = buf.slice(cut + 2);
        for (const line of frame.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const item = JSON.parse(line.slice(6));
          if (item.kind === "plan") t = traceReset(item.data);
          else if (t) onEvent(t, item);
          if (item.kind === "error") failed = true;
        }
      }
    }
  } catch (e) {
    failed = e.name === "AbortError" ? "stopped" : "failed";
    $("run-error").textContent = e.name === "AbortError" ? "stopped: the server cancelled the run's calls" : String(e.message || e);
  } finally {
    form.byok = undefined;
    state.runAbort = null;
    $("run-button").disabled = false; $("stop-button").disabled = true;
    badge.className = `badge ${failed ? "failed" : "done"}`; badge.textContent = failed ? (failed === true ? "failed" : failed) : "finished";
  }
}

// ---------------------------------------------------------------- 4. traces and reports
async function loadTraces(ev) {
  if (ev) ev.preventDefault();
  const q = new URLSearchParams();
  for (const k of ["pipeline", "tier", "key"]) { const v = $(`f-${k}`).value.trim(); if (v) q.set(k, v); }
  const since = $("f-since").value;
  if (since) q.set("since", String(Date.now() / 1000 - Number(since)));
  let data;
  try { data = await getJSON(`/studio/api/traces?${q}`); } catch (e) { $("trace-detail").textContent = String(e.message); return; }
  state.traces = data.runs;
  state.compare = new Set([...state.compare].filter((id) => data.runs.some((r) => r.run_id === id)));
  const body = clear(document.querySelector("#trace-table tbody"));
  for (const r of data.runs) {
    const box = el("input", { type: "checkbox", "aria-label": `compare ${r.run_id}`, checked: state.compare.has(r.run_id) });
    box.addEventListener("change", () => { if (box.checked) state.compare.add(r.run_id); else state.compare.delete(r.run_id); $("compare-button").disabled = state.compare.size !== 2; });
    const open = el("button", { type: "button", class: "link", text: r.run_id, "aria-label": `open run ${r.run_id}` });
    open.addEventListener("click", () => openTraces([r.run_id]));
    body.append(el("tr", {}, el("td", {}, box), el("td", {}, open), el("td", { text: when(r.ts) }), el("td", { text: modelName(r.pipeline, r.tier) }), el("td", { text: r.source }), el("td", { text: r.stop_reason }), el("td", { class: "num", text: num(r.calls) }), el("td", { class: "num", text: num(r.tokens) }), el("td", { class: "num", text: blank(r.cost) }), el("td", { class: "num", text: num(r.elapsed_ms) })));
  }
  if (!data.runs.length) body.append(el("tr", {}, el("td", { colspan: 10, text: "no stored runs match" })));
  $("compare-button").disabled = state.compare.size !== 2;
}

async function openTraces(ids) {
  const host = clear($("trace-detail"));
  let runs;
  try { runs = await Promise.all(ids.map((id) => getJSON(`/studio/api/traces/${encodeURIComponent(id)}`))); } catch (e) { host.textContent = String(e.message); return; }
  for (const r of runs) {
    const res = r.result || {};
    const sec = el("section", { "aria-label": `run ${r.run_id}` });
    sec.append(el("h3", { text: `${r.run_id} — ${modelName(r.pipeline, r.tier)}` }));
    const dl = el("dl", { class: "kv" });
    const add = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: blank(v) }));
    add("when (UTC)", when(r.ts)); add("source", r.source + (res.request?.studio_mode ? ` (${res.request.studio_mode})` : "")); add("key", r.key); add("stop reason", r.stop_reason);
    add("escalated", res.escalated === undefined ? "" : res.escalated ? `yes: ${blank(res.escalation_reason)}` : "no");
    add("calls", r.calls); add("tokens", num(r.tokens)); add("credits", r.credits); add("cost USD", r.cost); add("elapsed ms", num(r.elapsed_ms)); add("receipt hash", r.receipt_hash);
    sec.append(dl);
    const tb = el("tbody");
    for (const s of res.steps || []) tb.append(el("tr", {}, el("td", { text: s.id }), el("td", { text: s.status }), el("td", { class: "num", text: num(s.attempts) }), el("td", { class: "num", text: num(s.usage?.total_tokens) }), el("td", { class: "num", text: num(s.elapsed_ms) }), el("td", { text: blank(s.reason) })));
    sec.append(el("table", {}, el("caption", { text: "steps" }), el("thead", {}, el("tr", {}, ...["step", "status", "calls", "tokens", "ms", "reason"].map((h, i) => el("th", { scope: "col", class: i >= 2 && i <= 4 ? "num" : null, text: h })))), tb));
    sec.append(el("h4", { text: "answer" }), el("div", { class: "answer", text: res.answer || "" }));
    const evs = el("ol", { class: "events" });
    for (const e of r.events || []) evs.append(el("li", { text: `${e.kind}${e.step ? " " + e.step : ""} ${JSON.stringify(e.data)}` }));
    sec.append(el("h4", { text: `events (${(r.events || []).length})` }), evs);
    host.append(sec);
  }
  host.scrollIntoView({ block: "start" });
}

async function loadReports() {
  const list = clear($("report-list"));
  let data;
  try { data = await getJSON("/studio/api/reports"); } catch (e) { list.append(el("li", { text: String(e.message) })); return; }
  if (!data.reports.length) list.append(el("li", { class: "note", text: "no eval receipts in the project's reports/ folder (loomc eval --output reports/NAME.html writes one)" }));
  for (const r of data.reports) {
    const b = el("button", { type: "button", "aria-pressed": "false" }, el("span", { text: r.name }), el("span", { class: "mark", text: `${r.strategies.join(", ")} · ${r.runs} runs${r.created_at ? " · " + r.created_at.slice(0, 10) : ""}` }));
    b.addEventListener("click", () => {
      for (const x of document.querySelectorAll("#report-list button")) x.setAttribute("aria-pressed", String(x === b));
      const f = $("report-frame");
      f.hidden = false;
      f.src = `/studio/reports/${r.name.split("/").map(encodeURIComponent).join("/")}`;
    });
    list.append(el("li", {}, b));
  }
}

// ---------------------------------------------------------------- start
async function start() {
  let project;
  try { project = await getJSON("/studio/api/project"); } catch (e) { const p = $("load-error"); p.hidden = false; p.textContent = `cannot load the project: ${e.message}`; return; }
  state.project = project;
  state.sources = { ...project.sources };
  $("project-name").textContent = `${project.root} · ${project.policy}`;
  const pick = $("pick-pipeline"), list = $("pipeline-list");
  for (const p of project.pipelines) {
    pick.append(el("option", { value: p.id, text: `${p.id}${p.checks ? "" : " (does not check)"}` }));
    const b = el("button", { type: "button", "data-id": p.id, "aria-pressed": "false" }, el("span", { text: p.id }), el("span", { class: `mark ${p.checks ? "ok" : "bad"}`, text: p.checks ? "✓ checks" : "✗ errors" }));
    b.addEventListener("click", () => selectPipeline(p.id));
    list.append(el("li", {}, b));
  }
  pick.addEventListener("change", () => selectPipeline(pick.value));
  $("pick-source").addEventListener("change", () => showSource($("pick-source").value));
  refreshSourcePicker();
  if (project.pipelines.length) selectPipeline((project.pipelines.find((p) => p.id === `general@${project.default_tier}`) || project.pipelines[0]).id);
  fillRunForm();
  $("run-mode").addEventListener("change", () => { $("byok").hidden = $("run-mode").value !== "byok"; });
  $("run-form").addEventListener("submit", startRun);
  $("prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("run-form").requestSubmit(); });
  $("stop-button").addEventListener("click", () => state.runAbort?.abort());
  $("trace-filter").addEventListener("submit", loadTraces);
  $("compare-button").addEventListener("click", () => openTraces([...state.compare]));
  document.body.dataset.ready = "true";
  show(location.hash.slice(1));
  getJSON("/studio/api/check").then(renderCheck).catch((e) => { $("check-summary").textContent = `check failed: ${e.message}`; });
}
document.addEventListener("DOMContentLoaded", start);
