// icn fabric manager page: draws the fabric (torus slices or a circle
// layout), failed links and nodes, jobs by colour, link load or multicast
// EFI as a heatmap, multicast trees, and offers the main actions. No
// external assets: plain DOM and SVG.
"use strict";

const $ = (s) => document.querySelector(s);
const SVGNS = "http://www.w3.org/2000/svg";
let fabric = null, jobs = [], groups = [], loads = null;
let selectedJob = 0, selectedGroup = "";

// The token comes from the URL fragment (#token=…, also when pasted into
// an open tab) or local storage.
let unauthorized = false; // polling stops after a 401 until a new token
function takeTokenFromHash() {
  const m = location.hash.match(/token=([0-9a-fA-F]+)/);
  if (!m) return false;
  localStorage.setItem("icn-token", m[1]);
  history.replaceState(null, "", location.pathname);
  $("#token").value = m[1];
  return true;
}
(function initToken() {
  takeTokenFromHash();
  $("#token").value = localStorage.getItem("icn-token") || "";
  $("#token").addEventListener("change", (e) => { localStorage.setItem("icn-token", e.target.value.trim()); unauthorized = false; refresh(); });
  window.addEventListener("hashchange", () => { if (takeTokenFromHash()) { unauthorized = false; refresh(); } });
})();

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + ($("#token").value || "").trim() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (r.status === 401) {
    unauthorized = true;
    throw new Error("no valid token: paste it into the token field, or open the address icn serve printed (#token=…); the token is in the .token file next to the database");
  }
  if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
  return data;
}

function status(msg, err) {
  const s = $("#status");
  s.textContent = msg;
  s.className = err ? "err" : "";
}

function jobColor(id) {
  if (!id) return "#e0e0e0";
  const h = (id * 137.508) % 360;
  return `hsl(${h.toFixed(0)}, 65%, 55%)`;
}

// Heat colour for a value in [0, 1]: light yellow → red → dark purple.
function heat(t) {
  t = Math.max(0, Math.min(1, t));
  const stops = [[255, 237, 160], [254, 178, 76], [240, 59, 32], [128, 0, 38]];
  const x = t * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

// layout returns x,y per node id and the plane labels.
function layout(f) {
  const pos = new Array(f.nodes.length);
  const labels = [];
  const dims = f.dims || [];
  if (dims.length >= 1 && f.nodes.every((n) => n.coord)) {
    const dx = dims[0], dy = dims.length > 1 ? dims[1] : 1;
    const rest = dims.slice(2);
    let planes = 1;
    for (const d of rest) planes *= d;
    const cols = Math.ceil(Math.sqrt(planes * dy / dx));
    const gap = 2, cell = 24;
    const pw = (dx + gap) * cell, ph = (dy + gap) * cell;
    for (const n of f.nodes) {
      let p = 0, mul = 1;
      for (let i = 2; i < dims.length; i++) { p += n.coord[i] * mul; mul *= dims[i]; }
      const px = (p % cols) * pw, py = Math.floor(p / cols) * ph;
      pos[n.id] = [px + cell * (n.coord[0] + 1), py + cell * ((dims.length > 1 ? n.coord[1] : 0) + 1)];
    }
    for (let p = 0; p < planes; p++) {
      const c = []; let q = p;
      for (const d of rest) { c.push(q % d); q = Math.floor(q / d); }
      labels.push({ x: (p % cols) * pw + cell * .5, y: Math.floor(p / cols) * ph + cell * .45,
        text: rest.length ? rest.map((v, i) => "ZWVU"[i] + "=" + c[i]).join(" ") : "" });
    }
    return { pos, labels, w: Math.min(planes, cols) * pw, h: Math.ceil(planes / cols) * ph, cell };
  }
  const n = f.nodes.length, r = Math.max(200, n * 3);
  f.nodes.forEach((nd, i) => { pos[nd.id] = [r + 20 + r * Math.cos(2 * Math.PI * i / n), r + 20 + r * Math.sin(2 * Math.PI * i / n)]; });
  return { pos, labels, w: 2 * r + 40, h: 2 * r + 40, cell: 10 };
}

function draw() {
  const svg = $("#fabric");
  svg.replaceChildren();
  if (!fabric) return;
  if (fabric.nodes.length > 8192) {
    el("text", { x: 10, y: 20 }, svg).textContent = `${fabric.nodes.length} nodes: too many to draw`;
    return;
  }
  const L = layout(fabric);
  svg.setAttribute("viewBox", `0 0 ${L.w} ${L.h}`);
  for (const lb of L.labels) el("text", { x: lb.x, y: lb.y, class: "plane-label" }, svg).textContent = lb.text;
  const mode = $("#heat").value;
  const vals = loads ? (mode === "efi" ? loads.efi : loads.routes) : null;
  const maxv = vals ? Math.max(1, ...vals) : 1;
  const treeLinks = new Set();
  const g = groups.find((x) => x.id === selectedGroup);
  if (g && g.edges) {
    const byName = new Map(fabric.nodes.map((n) => [n.name, n.id]));
    const key = (a, b) => Math.min(a, b) + ":" + Math.max(a, b);
    const edgeSet = new Set(g.edges.map((e) => key(byName.get(e[0]), byName.get(e[1]))));
    for (const l of fabric.links) if (edgeSet.has(key(l.a, l.b))) treeLinks.add(l.id);
  }
  const dims = fabric.dims || [];
  const planar = (l) => dims.length === 0 || l.dim < 0 || l.dim <= 1;
  for (const l of fabric.links) {
    if (!planar(l)) continue;
    const a = L.pos[l.a], b = L.pos[l.b];
    let x2 = b[0], y2 = b[1];
    // Wrap-around links are drawn as stubs leaving the plane.
    if (Math.abs(a[0] - b[0]) > L.cell * 1.5 || Math.abs(a[1] - b[1]) > L.cell * 1.5) {
      x2 = a[0] + (l.dim === 0 ? L.cell * .45 : 0);
      y2 = a[1] + (l.dim === 1 ? L.cell * .45 : 0);
    }
    const line = el("line", { x1: a[0], y1: a[1], x2, y2, class: "link" + (l.failed ? " failed" : "") + (treeLinks.has(l.id) ? " tree" : ""),
      "data-link": l.name }, svg);
    if (vals && mode !== "none" && vals[l.id] > 0) line.style.stroke = heat(vals[l.id] / maxv);
    el("title", {}, line).textContent = `${l.name}${vals ? " — " + mode + " " + (vals[l.id] || 0) : ""}${l.failed ? " (failed)" : ""}`;
  }
  const inSel = new Set();
  const sj = jobs.find((j) => j.id === selectedJob);
  if (sj) for (const n of [...sj.active, ...sj.transit]) inSel.add(n);
  for (const n of fabric.nodes) {
    const p = L.pos[n.id];
    const c = el("circle", { cx: p[0], cy: p[1], r: inSel.has(n.name) ? L.cell * .36 : L.cell * .28,
      class: "node" + (n.failed ? " failed" : ""), "data-node": n.name, "data-job": n.job || 0 }, svg);
    c.style.fill = jobColor(n.job);
    el("title", {}, c).textContent = n.name + (n.job ? " — job " + n.job : "") + (n.failed ? " (failed)" : "");
    c.addEventListener("click", () => { $("#mcast-form").member.value = n.name; });
  }
  $("#legend").innerHTML = mode === "none" ? "" :
    `0 <span class="legend-box" style="background:${heat(0)}"></span><span class="legend-box" style="background:${heat(.5)}"></span><span class="legend-box" style="background:${heat(1)}"></span> ${maxv}`;
}

function renderLists() {
  const tb = $("#jobs tbody");
  tb.replaceChildren();
  for (const j of jobs) {
    const tr = document.createElement("tr");
    tr.dataset.job = j.id;
    if (j.id === selectedJob) tr.className = "sel";
    const rs = j.routing || "ok";
    const why = j.problem ? ` title="${esc(j.problem)}"` : "";
    const migrate = rs === "broken" ? `<button data-migrate="${j.id}">migrate</button>` : "";
    tr.innerHTML = `<td>${j.id}${j.reachable ? "" : " ⚠"}</td><td>${j.active.length}</td><td>${j.transit.length}</td><td>${j.stats.diameter}</td><td>${j.stats.pi_max}</td><td class="rs-${rs}"${why}>${rs}</td><td>${migrate}<button data-release="${j.id}">release</button></td>`;
    tr.addEventListener("click", (e) => { if (!e.target.dataset.release && !e.target.dataset.migrate) { selectedJob = selectedJob === j.id ? 0 : j.id; renderLists(); draw(); } });
    tb.appendChild(tr);
  }
  const gb = $("#groups tbody");
  gb.replaceChildren();
  for (const g of groups) {
    const tr = document.createElement("tr");
    if (g.id === selectedGroup) tr.className = "sel";
    tr.innerHTML = `<td>${esc(g.id)}</td><td>${g.state}</td><td>${g.members.length}/${g.member_count}</td><td>${g.height}</td>`;
    tr.addEventListener("click", () => { selectedGroup = selectedGroup === g.id ? "" : g.id; renderLists(); draw(); });
    gb.appendChild(tr);
  }
  $("#failed").textContent = fabric ? "failed: " + ([...fabric.failed_links, ...fabric.failed_nodes].join(", ") || "none") : "";
}

function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" }[c])); }

async function refresh() {
  try {
    [fabric, jobs, groups, loads] = await Promise.all([api("GET", "/api/fabric"), api("GET", "/api/jobs"), api("GET", "/api/mcast"), api("GET", "/api/fabric/load")]);
    const busy = fabric.nodes.filter((n) => n.job).length;
    $("#summary").textContent = `${fabric.spec} · ${fabric.rules} · ${fabric.nodes.length} nodes, ${busy} busy · ${jobs.length} jobs · ${groups.length} groups`;
    // The failure field's example names a real link and node of this fabric.
    if (fabric.links.length && fabric.nodes.length) {
      $("#fail-form").target.placeholder = `${fabric.links[0].name} or ${fabric.nodes[fabric.nodes.length - 1].name}`;
    }
    const audit = await api("GET", "/api/audit?limit=1000");
    const ol = $("#audit");
    ol.replaceChildren();
    for (const e of audit.slice(-30).reverse()) {
      const li = document.createElement("li");
      li.textContent = `${e.time.slice(11, 19)} ${e.action} ${e.subject}`;
      ol.appendChild(li);
    }
    renderLists();
    draw();
  } catch (e) {
    status(e.message, true);
  }
}

$("#alloc-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = e.target;
  try {
    const j = await api("POST", "/api/jobs", { nodes: +f.nodes.value, transit: +f.transit.value, algo: f.algo.value, name: f.name.value });
    selectedJob = j.id;
    status(`job ${j.id} placed on ${j.active.length} + ${j.transit.length} nodes`);
  } catch (err) { status(err.message, true); }
  refresh();
});

$("#jobs").addEventListener("click", async (e) => {
  const mid = e.target.dataset.migrate;
  if (mid) {
    try { const j = await api("POST", `/api/jobs/${mid}/migrate`); status(`job ${mid} migrated to ${j.active.length + j.transit.length} nodes`); } catch (err) { status(err.message, true); }
    refresh();
    return;
  }
  const id = e.target.dataset.release;
  if (!id) return;
  try { await api("DELETE", "/api/jobs/" + id); status(`job ${id} released`); } catch (err) { status(err.message, true); }
  refresh();
});

$("#fail-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = e.target, target = f.target.value.trim();
  const repair = e.submitter && e.submitter.value === "repair";
  const body = /[+-][XYZWVU](#\d+)?$|\[\d+\]$|~/.test(target) ? { link: target } : { node: target };
  body.repair = repair;
  try {
    const r = await api("POST", "/api/fabric/failures", body);
    const rer = (r.jobs || []).filter((x) => x.result === "rerouted").map((x) => x.id);
    status(`${repair ? "repaired" : "failed"} ${target}; rerouted: ${rer.join(", ") || "none"}; broken: ${r.affected_jobs.join(", ") || "none"}`);
  } catch (err) { status(err.message, true); }
  refresh();
});

$("#mcast-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = e.target, op = e.submitter ? e.submitter.value : "join";
  try {
    const r = await api("POST", "/api/mcast/" + op, { group: f.group.value, member: f.member.value, member_count: +f.count.value });
    selectedGroup = f.group.value;
    status(`${op}: group ${r.id} is ${r.state}`);
  } catch (err) { status(err.message, true); }
  refresh();
});

$("#heat").addEventListener("change", draw);
refresh();
setInterval(() => { if (!unauthorized) refresh(); }, 3000);
