// vc-scheduler web view: reads /api/... (or, in a page written by `simulate -o html`, the data
// embedded as window.VC_DATA) and re-reads what it shows when the server announces a session.
"use strict";

const DATA = window.VC_DATA || null;
const state = { jobsOffset: 0, nodesOffset: 0, pendingOffset: 0, limit: 24, queuesSeen: "" };
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

// ---- data access -------------------------------------------------------------------------
function localPage(all, params) {
  let items = all.items || [];
  const q = params.q, phase = params.phase, queue = params.queue, sort = params.sort;
  if (q) items = items.filter((x) => (x.namespace ? x.namespace + "/" + x.name : x.name).includes(q));
  if (phase) items = items.filter((x) => x.phase === phase);
  if (queue) items = items.filter((x) => (x.queue ? x.queue === queue : x.queues && queue in x.queues));
  if (params.devices === "1") items = items.filter((x) => x.cards && x.cards.length);
  if (sort === "cpu" || sort === "memory") {
    const k = sort === "cpu" ? "cpu" : "memory";
    items = items.slice().sort((a, b) => b.used[k] / (b.allocatable[k] || 1) - a.used[k] / (a.allocatable[k] || 1));
  }
  const offset = +params.offset || 0, limit = +params.limit || 50;
  const out = { total: items.length, offset, limit, items: items.slice(offset, offset + limit) };
  if (all.pods !== undefined) out.pods = items.reduce((n, g) => n + g.count, 0);
  return out;
}

async function api(path, params = {}) {
  if (DATA) {
    const key = path.replace(/^\/api\//, "");
    if (key.startsWith("explain/")) return (DATA.explain || {})[key.slice(8)] || null;
    const all = DATA[key];
    return all && all.items && key !== "queues" && key !== "sessions" ? localPage(all, params) : all;
  }
  const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== undefined)).toString();
  const r = await fetch("api/" + path.replace(/^\/api\//, "") + (qs ? "?" + qs : ""), { cache: "no-store" });
  if (!r.ok) return null;
  return r.json();
}

// ---- formatting --------------------------------------------------------------------------
function fmtBytes(b) {
  if (b == null) return "∞";
  const u = ["B", "Ki", "Mi", "Gi", "Ti"]; let i = 0;
  while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (b >= 100 || i === 0 ? Math.round(b) : b.toFixed(1).replace(/\.0$/, "")) + u[i];
}
const fmtNum = (v) => (v == null ? "∞" : +(+v).toFixed(2) + "");
const fmtRes = (r) => (!r ? "–" : r.cpu == null && r.memory == null ? "unlimited" : `${fmtNum(r.cpu)} cpu, ${fmtBytes(r.memory)}`);
const fmtMiB = (m) => (m >= 1024 ? (m / 1024).toFixed(m % 1024 ? 1 : 0) + " GiB" : m + " MiB");
function ago(t) {
  if (!t || t < 1e9) return ""; // simulated manifests carry no real times
  const s = Math.max(0, Date.now() / 1000 - t);
  if (s < 60) return Math.round(s) + "s";
  if (s < 3600) return Math.round(s / 60) + "m";
  if (s < 86400) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}
function bar(used, total, cls = "") {
  const f = total > 0 ? Math.min(1, used / total) : 0;
  const heat = f >= 0.999 ? " full" : f >= 0.8 ? " hot" : "";
  return `<div class="bar${heat} ${cls}"><span style="width:${(f * 100).toFixed(1)}%"></span></div>`;
}
const barRow = (label, used, total, text) => `<div class="barrow"><span>${label}</span>${bar(used, total)}<span class="v">${text}</span></div>`;
const chips = (obj) => Object.entries(obj || {}).map(([k, v]) => `<span class="chip phase-${esc(k)}">${v} ${esc(k)}</span>`).join("");
const podLink = (key) => `<span class="pod-link" data-pod="${esc(key)}">${esc(key)}</span>`;

function pager(id, page, offsetKey, load) {
  const el = $(id);
  if (page.total <= page.limit) return;
  const from = page.offset + 1, to = Math.min(page.total, page.offset + page.limit);
  const div = document.createElement("div");
  div.className = "pager";
  div.innerHTML = `<button data-d="-1">‹ prev</button><span>${from}–${to} of ${page.total}</span><button data-d="1">next ›</button>`;
  const [prev, , next] = div.children;
  prev.disabled = page.offset === 0; next.disabled = to >= page.total;
  div.onclick = (e) => {
    const d = +(e.target.dataset.d || 0); if (!d) return;
    state[offsetKey] = Math.max(0, page.offset + d * page.limit); load();
  };
  el.appendChild(div);
}

// ---- sections ----------------------------------------------------------------------------
async function loadOverview() {
  const o = await api("/api/overview");
  if (!o) return;
  const t = [];
  if (!o.session) { $("tiles").innerHTML = `<div class="tile"><div class="value">–</div><div class="detail">${esc(o.message)}</div></div>`; return; }
  const a = o.allocatable, u = o.used, c = o.cards;
  const pods = o.pods || {};
  const running = (pods.Running || 0) + (pods.Bound || 0) + (pods.Binding || 0);
  t.push(tile("Nodes", o.nodes, o.unschedulable_nodes ? `${o.unschedulable_nodes} cordoned` : "all schedulable"));
  t.push(tile("CPU requested", `${fmtNum(u.cpu)} / ${fmtNum(a.cpu)}`, bar(u.cpu, a.cpu)));
  t.push(tile("Memory requested", `${fmtBytes(u.memory)} / ${fmtBytes(a.memory)}`, bar(u.memory, a.memory)));
  if (c.total) t.push(tile("Accelerator cards", `${c.in_use} / ${c.total} in use`, c.memory_total ? bar(c.memory_used, c.memory_total) + `<div class="detail">${fmtMiB(c.memory_used)} of ${fmtMiB(c.memory_total)} card memory</div>` : ""));
  t.push(tile("Jobs", Object.values(o.jobs).reduce((x, y) => x + y, 0), chips(o.jobs)));
  t.push(tile("Pods", `${running} running`, `<span id="unplaced-count">${o.unplaced}</span> waiting · ${Object.entries(pods).map(([k, v]) => `${v} ${k}`).join(", ")}`));
  const l = o.last || {};
  t.push(tile("Last session", `${fmtNum(l.total_ms)} ms`, `#${o.session} · ${l.binds || 0} binds · ${l.evictions || 0} evictions`));
  $("tiles").innerHTML = t.join("");
  if (!DATA) $("status-text").textContent = `live · session #${o.session}`;
  else $("status-text").textContent = `simulated · ${o.session} session${o.session > 1 ? "s" : ""}`;
}
const tile = (label, value, detail) => `<div class="tile"><div class="label">${label}</div><div class="value">${value}</div><div class="detail">${detail}</div></div>`;

async function loadQueues() {
  const qs = await api("/api/queues");
  if (!qs) return;
  const rows = qs.items.map((q) => {
    const d = q.deserved || {}, al = q.allocated || {}, cap = q.capability || {};
    const share = q.share == null ? "–" : (q.share * 100).toFixed(0) + "%";
    return `<tr data-queue="${esc(q.name)}"><td><b>${esc(q.name)}</b><div class="muted">${esc(q.state)}${q.parent ? " · parent " + esc(q.parent) : ""}</div></td>
      <td class="num">${q.weight}</td>
      <td style="min-width:140px">${bar(q.share || 0, 1)}<div class="muted">${share} of deserved</div></td>
      <td class="num">${fmtRes(al)}</td><td class="num">${fmtRes(d)}</td>
      <td class="num">${q.capability ? fmtRes(cap) : "unlimited"}</td><td>${chips(q.jobs) || '<span class="muted">no jobs</span>'}</td></tr>`;
  });
  $("queues").innerHTML = `<table><tr><th>queue</th><th class="num">weight</th><th>share</th><th class="num">allocated</th><th class="num">deserved</th><th class="num">capability</th><th>jobs</th></tr>${rows.join("")}</table>`;
  const names = qs.items.map((q) => q.name).join(",");
  if (names !== state.queuesSeen) {
    state.queuesSeen = names;
    const sel = $("jobs-queue"), cur = sel.value;
    sel.innerHTML = `<option value="">all queues</option>` + qs.items.map((q) => `<option>${esc(q.name)}</option>`).join("");
    sel.value = cur;
  }
}

const ACTION_COLORS = { open: "#9aa7c7", enqueue: "#f2b84b", allocate: "#2f6fed", backfill: "#43b883", preempt: "#d64545", reclaim: "#9b59b6" };
async function loadSessions() {
  const s = await api("/api/sessions");
  if (!s || !s.items.length) { $("sessions").innerHTML = `<div class="empty">no session yet</div>`; return; }
  const items = s.items, W = 460, H = 150, pad = 28, bw = Math.max(2, (W - pad) / 60 - 2);
  // scale to the typical session, not to one slow outlier (the first after a restart): taller
  // bars are clipped and marked with a red cap, their value in the tooltip
  const sorted = items.map((x) => x.total_ms).sort((a, b) => a - b);
  const typical = sorted[Math.floor(0.9 * (sorted.length - 1))];
  const max = Math.max(0.5, Math.min(sorted[sorted.length - 1], typical * 2));
  const actions = new Set(["open"]);
  items.forEach((x) => Object.keys(x.action_ms).forEach((k) => actions.add(k)));
  let bars = "";
  items.forEach((x, i) => {
    let y = H - 16; const xpos = pad + i * (bw + 2);
    const parts = [["open", x.open_ms], ...Object.entries(x.action_ms)];
    const title = `session #${x.session}: ${x.total_ms} ms, ${x.binds} binds, ${x.evictions} evictions, ${x.unplaced} waiting\n` + parts.map(([k, v]) => `${k} ${v} ms`).join("\n");
    const top = H - 16 - (H - 24);
    if (x.total_ms > max) bars += `<rect x="${xpos}" y="${top - 3}" width="${bw}" height="2" fill="#d64545"><title>${esc(title)}</title></rect>`;
    for (const [k, v] of parts) {
      const h = Math.min((v / max) * (H - 24), y - top); y -= h;
      bars += `<rect x="${xpos}" y="${y.toFixed(1)}" width="${bw}" height="${Math.max(0, h).toFixed(1)}" fill="${ACTION_COLORS[k] || "#888"}"><title>${esc(title)}</title></rect>`;
    }
    if (x.binds) bars += `<circle cx="${xpos + bw / 2}" cy="${H - 6}" r="2.5" fill="#1f9d63"><title>${x.binds} binds</title></circle>`;
    if (x.evictions) bars += `<circle cx="${xpos + bw / 2}" cy="${H - 1.5}" r="2.5" fill="#d64545"><title>${x.evictions} evictions</title></circle>`;
  });
  const axis = `<text x="0" y="12">${fmtNum(max)} ms</text><text x="0" y="${H - 14}">0</text><line x1="${pad - 2}" x2="${W}" y1="${H - 16}" y2="${H - 16}" stroke="#ccd3df"/>`;
  const legend = [...actions].map((k) => `<span><i style="background:${ACTION_COLORS[k] || "#888"}"></i>${k}</span>`).join("") +
    `<span><i style="background:#1f9d63;border-radius:50%"></i>binds</span><span><i style="background:#d64545;border-radius:50%"></i>evictions</span>`;
  const last = items[items.length - 1];
  $("sessions").innerHTML = `<svg viewBox="0 0 ${W} ${H}" width="100%" preserveAspectRatio="xMinYMin meet">${axis}${bars}</svg><div class="legend">${legend}</div>
    <div class="muted" style="margin-top:6px">last: #${last.session}, ${last.total_ms} ms, ${last.binds} binds, ${last.evictions} evictions, ${last.unplaced} pods waiting</div>`;
}

async function loadPending() {
  const p = await api("/api/pending", { offset: state.pendingOffset, limit: 10 });
  if (!p) return;
  if (!p.total) { $("pending").innerHTML = `<div class="empty">no pod is waiting</div>`; return; }
  $("pending").innerHTML = `<div class="muted" style="margin-bottom:8px">${p.pods} pods waiting, ${p.total} distinct reasons</div>` + p.items.map((g) => `
    <div class="group" data-reason="${esc(g.reason)}"><span class="count">${g.count}</span><span class="chip">${esc(g.condition)}</span>
      ${Object.entries(g.queues).map(([q, n]) => `<span class="chip">queue ${esc(q)}: ${n}</span>`).join("")}
      <div class="reason">${esc(g.reason)}</div>
      <div class="pods">${g.pods.map(podLink).join("")}${g.count > g.pods.length ? `<span class="muted">and ${g.count - g.pods.length} more</span>` : ""}</div></div>`).join("");
  pager("pending", p, "pendingOffset", loadPending);
}

async function loadJobs() {
  const j = await api("/api/jobs", { offset: state.jobsOffset, limit: 15, q: $("jobs-q").value, phase: $("jobs-phase").value, queue: $("jobs-queue").value });
  if (!j) return;
  if (!j.total) { $("jobs").innerHTML = `<div class="empty">no job matches</div>`; return; }
  $("jobs").innerHTML = `<table><tr><th>job</th><th>queue</th><th>phase</th><th class="num">minMember</th><th class="num">running</th><th class="num">pending</th><th>why it waits</th><th class="num">since</th></tr>` +
    j.items.map((x) => `<tr data-job="${esc(x.namespace + "/" + x.name)}"><td><b>${esc(x.name)}</b><div class="muted">${esc(x.namespace)} · priority ${x.priority}</div></td><td>${esc(x.queue)}</td>
      <td><span class="chip phase-${esc(x.phase)}">${esc(x.phase)}</span></td><td class="num">${x.min_member}</td><td class="num">${x.running}</td><td class="num">${x.pending}</td>
      <td class="reason">${esc(x.reason)}</td><td class="num muted">${ago(x.since)}</td></tr>`).join("") + `</table>`;
  pager("jobs", j, "jobsOffset", loadJobs);
}

function cardHtml(c) {
  const pods = (c.pods || []).map((p) => `<div>${esc(p)}</div>`).join("") || `<div class="muted">idle</div>`;
  let body = "";
  if (c.memory_total != null) body += barRow("mem", c.memory_used, c.memory_total, "") + `<div class="barrow"><span class="v">${fmtMiB(c.memory_used)} / ${fmtMiB(c.memory_total)}</span></div>`;
  if (c.cores_total) body += barRow("cores", c.cores_used, c.cores_total, "") + `<div class="barrow"><span class="v">${c.cores_used}% of ${c.cores_total}%${c.shares_total != null ? ` · ${c.shares_used}/${c.shares_total} shares` : ""}</span></div>`;
  if (c.mig) body += `<div class="muted">MIG ${esc(c.mig.geometry)}: ${c.mig.slices.map((s) => `${esc(s.profile)} ${s.used}/${s.total}`).join(", ")}</div>`;
  if (c.kind === "gpu") body += `<div class="muted">whole card ${c.in_use ? "in use" : "free"}</div>`;
  const title = c.kind === "vgpu" ? `GPU ${c.index} <span class="muted">${esc(c.type)}</span>` : c.kind === "ascend" ? `NPU ${c.index} <span class="muted">${esc(c.type)}</span>` : c.kind === "gpushare" ? `GPU ${c.index} <span class="muted">gpu-share</span>` : `GPU ${c.index} <span class="muted">nvidia.com/gpu</span>`;
  return `<div class="card${c.healthy ? "" : " unhealthy"}" data-card="${esc(c.uuid || c.index)}" data-memory-used="${c.memory_used ?? ""}">
    <div class="ctitle">${title}${c.healthy ? "" : ' <b style="color:var(--bad)">unhealthy</b>'}</div>${body}<div class="cpods">${pods}</div></div>`;
}

async function loadNodes() {
  const n = await api("/api/nodes", { offset: state.nodesOffset, limit: state.limit, q: $("nodes-q").value, sort: $("nodes-sort").value, devices: $("nodes-devices").checked ? "1" : "" });
  if (!n) return;
  if (!n.total) { $("nodes").innerHTML = `<div class="empty">no node matches</div>`; return; }
  $("nodes").innerHTML = n.items.map((x) => {
    const a = x.allocatable, u = x.used;
    return `<div class="node" data-node="${esc(x.name)}"><div class="name">${esc(x.name)}<span class="muted">${x.pods} pods${x.unschedulable ? " · cordoned" : ""}</span></div>
      ${barRow("CPU", u.cpu, a.cpu, `${fmtNum(u.cpu)} / ${fmtNum(a.cpu)}`)}${barRow("memory", u.memory, a.memory, `${fmtBytes(u.memory)} / ${fmtBytes(a.memory)}`)}
      ${x.cards.length ? `<div class="cards">${x.cards.map(cardHtml).join("")}</div>` : ""}</div>`;
  }).join("");
  const wrap = document.createElement("div"); wrap.id = "nodes-pager"; $("nodes").after(wrap);
  document.querySelectorAll("#nodes-panel .pager").forEach((e) => e.remove());
  pager("nodes-panel", n, "nodesOffset", loadNodes);
}

async function showExplain(key) {
  const [ns, name] = key.split("/");
  const e = await api(`/api/explain/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
  const box = $("explain"), body = $("explain-body");
  box.classList.remove("hidden");
  if (!e) { body.innerHTML = `<h2>${esc(key)}</h2><div class="empty">not in the last session</div>`; return; }
  const lacks = e.closest_nodes.map((c) => `<tr><td>${esc(c.node)}</td><td>${Object.entries(c.lacks).map(([k, v]) => `${esc(k)}: ${esc(v)}`).join("<br>") || "nothing missing"}</td><td class="reason">${esc(c.reasons.join(", "))}</td></tr>`).join("");
  const cards = e.cards.map((c) => `<tr><td>${esc(c.node)} #${c.index}</td><td class="num">${c.free_memory}/${c.memory} MiB</td><td class="num">${c.free_cores}%</td><td class="num">${c.free_shares}</td><td>${c.fits ? "fits" : ""}</td></tr>`).join("");
  body.innerHTML = `<h2>${esc(e.pod)} <span class="chip">${esc(e.status)}</span></h2>
    <p><b>${esc(e.verdict)}</b></p>${e.message ? `<pre>${esc(e.message)}</pre>` : ""}
    <p>job ${esc(e.job.name)}: <span class="chip phase-${esc(e.job.phase)}">${esc(e.job.phase)}</span> minMember ${e.job.min_member} ${chips(e.job.pods)}</p>
    ${e.job.enqueue && e.job.enqueue !== e.message ? `<pre>${esc(e.job.enqueue)}</pre>` : ""}
    <p>queue <b>${esc(e.queue.name)}</b> ${esc(e.queue.state)} · share ${e.queue.share ?? "–"} · allocated ${fmtRes(e.queue.allocated)} · deserved ${fmtRes(e.queue.deserved)} · capability ${e.queue.capability ? fmtRes(e.queue.capability) : "unlimited"}</p>
    ${Object.keys(e.node_reasons).length ? `<h2>node reasons</h2><table>${Object.entries(e.node_reasons).map(([r, n]) => `<tr><td class="num">${n}</td><td>${esc(r)}</td></tr>`).join("")}</table>` : ""}
    ${lacks ? `<h2 style="margin-top:12px">closest nodes</h2><table><tr><th>node</th><th>lacks</th><th>reasons</th></tr>${lacks}</table>` : ""}
    ${cards ? `<h2 style="margin-top:12px">nearest cards</h2><table><tr><th>card</th><th class="num">free memory</th><th class="num">free cores</th><th class="num">free shares</th><th></th></tr>${cards}</table>` : ""}`;
}

// ---- wiring ------------------------------------------------------------------------------
let busy = false, again = false;
async function refresh() {
  if (busy) { again = true; return; }
  busy = true;
  try { await Promise.all([loadOverview(), loadQueues(), loadSessions(), loadPending(), loadJobs(), loadNodes()]); }
  catch (err) { $("status-text").textContent = "error: " + err; }
  finally { busy = false; document.body.dataset.session = (window.lastSession || 0); }
  if (again) { again = false; refresh(); }
}

function connect() {
  const st = $("status");
  const es = new EventSource("api/events");
  es.addEventListener("session", (ev) => { window.lastSession = +ev.data; st.className = "status live"; refresh(); });
  es.onerror = () => { st.className = "status down"; $("status-text").textContent = "disconnected, retrying…"; };
}

document.addEventListener("click", (e) => {
  const pod = e.target.closest && e.target.closest(".pod-link");
  if (pod) showExplain(pod.dataset.pod);
});
$("explain-close").onclick = () => $("explain").classList.add("hidden");
let typing;
for (const id of ["jobs-q", "nodes-q"]) $(id).addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => { state.jobsOffset = state.nodesOffset = 0; refresh(); }, 250); });
for (const id of ["jobs-phase", "jobs-queue", "nodes-sort", "nodes-devices"]) $(id).addEventListener("change", () => { state.jobsOffset = state.nodesOffset = 0; refresh(); });

if (DATA) { $("status").className = "status live"; refresh(); } else { refresh(); connect(); }
