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

// Answers with an ETag (the fabric, its loads, the jobs) are kept: the
// next GET sends the tag, and an unchanged answer comes back as 304
// without a body (an unchanged 32 768-node fabric is not sent again
// every 3 s). kept.hits counts those, kept.misses the full answers.
const kept = { byPath: new Map(), hits: 0, misses: 0 };

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + ($("#token").value || "").trim() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const old = method === "GET" ? kept.byPath.get(path) : undefined;
  if (old) headers["If-None-Match"] = old.tag;
  // A standby of a replicated store answers changes with a redirect to
  // its leader, which a page cannot follow with its token: it says where
  // the leader is instead.
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: "manual", cache: "no-store" });
  if (r.status === 304 && old) { kept.hits++; return old.data; }
  if (r.type === "opaqueredirect" || r.status === 307) {
    const h = await fetch("/healthz").then((x) => x.json()).catch(() => ({}));
    throw new Error(`this instance is a standby: changes go to the leader, ${h.leader || "elected in a moment"} (open its page)`);
  }
  const data = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (r.status === 401) {
    unauthorized = true;
    throw new Error("no valid token: paste it into the token field, or open the address icn serve printed (#token=…); the token is in the .token file next to the database");
  }
  if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
  const tag = r.headers.get("ETag");
  if (method === "GET" && tag) { kept.byPath.set(path, { tag, data }); kept.misses++; }
  return data;
}

// gridFabric returns the fabric with its node and link lists: those of
// the answer, or on a plain grid (GET /api/fabric?compact=1 answers
// "grid": true without them, see client.FabricGrid) built from its
// sizes: node v at v's mixed-radix coordinates (X fastest), named by
// them; per node, in dimension order, a link to the next node along each
// dimension (none from a mesh dimension's last node). The lists are kept
// while the structure stays; each answer sets the nodes' jobs and the
// failures.
const grid = { key: "", nodes: null, links: null, failedNodes: [], failedLinks: [] };
class GridNode {
  constructor(id, coord) { this.id = id; this.coord = coord; this.job = 0; this.failed = false; }
  get name() { return this.coord.join("."); }
  get kind() { return "endpoint"; }
}
class GridLink {
  constructor(id, a, b, dim) { this.id = id; this.a = a; this.b = b; this.dim = dim; this.failed = false; }
  get name() { return grid.nodes[this.a].name + "+" + "XYZWVU"[this.dim]; }
}
function gridFabric(f) {
  if (!f.grid) return f;
  const dims = f.dims, key = f.spec + ":" + dims.join("x") + ":" + f.wrap.join(",");
  if (grid.key !== key) {
    let n = 1;
    for (const d of dims) n *= d;
    const nodes = new Array(n), links = [], c = new Array(dims.length).fill(0);
    for (let v = 0; v < n; v++) {
      nodes[v] = new GridNode(v, c.slice());
      let stride = 1;
      for (let i = 0; i < dims.length; i++) {
        if (f.wrap[i] || c[i] + 1 < dims[i]) {
          links.push(new GridLink(links.length, v, c[i] + 1 === dims[i] ? v - (dims[i] - 1) * stride : v + stride, i));
        }
        stride *= dims[i];
      }
      for (let i = 0; i < c.length; i++) { if (++c[i] < dims[i]) break; c[i] = 0; }
    }
    Object.assign(grid, { key, nodes, links, failedNodes: [], failedLinks: [] });
  }
  for (const id of grid.failedNodes) grid.nodes[id].failed = false;
  for (const id of grid.failedLinks) grid.links[id].failed = false;
  f.node_jobs.forEach((j, v) => { grid.nodes[v].job = j; });
  for (const id of f.failed_node_ids) grid.nodes[id].failed = true;
  for (const id of f.failed_link_ids) grid.links[id].failed = true;
  grid.failedNodes = f.failed_node_ids; grid.failedLinks = f.failed_link_ids;
  return { ...f, nodes: grid.nodes, links: grid.links };
}

// jobMarks returns what the drawing marks of the running jobs: their
// transit nodes (drawn as rings, where active nodes are filled), the
// nodes of broken jobs, and each broken job's pair of active nodes with
// no legal route (a dashed red line between them).
function jobMarks() {
  const transit = new Set(), broken = new Set(), pairs = [];
  for (const j of jobs) {
    for (const n of j.transit || []) transit.add(n);
    if (j.routing !== "broken") continue;
    for (const n of [...j.active, ...(j.transit || [])]) broken.add(n);
    if (j.unreachable) pairs.push({ job: j.id, a: j.unreachable[0], b: j.unreachable[1] });
  }
  return { transit, broken, pairs };
}

// groupMarks returns the selected multicast group's members, root and
// tree links (link ids) on the current fabric.
function groupMarks() {
  const members = new Set(), tree = new Set();
  const g = groups.find((x) => x.id === selectedGroup);
  if (!g) return { g: null, members, root: "", tree };
  for (const m of g.members) members.add(m);
  if (g.edges && g.edges.length) {
    const byName = nodeIndex();
    const key = (a, b) => Math.min(a, b) + ":" + Math.max(a, b);
    const edgeSet = new Set(g.edges.map((e) => key(byName.get(e[0]), byName.get(e[1]))));
    for (const l of fabric.links) if (edgeSet.has(key(l.a, l.b))) tree.add(l.id);
  }
  return { g, members, root: g.root || "", tree };
}

// nodeIndex maps node names to ids (kept while the fabric's structure
// stays).
let nodeIndexOf = { nodes: null, map: null };
function nodeIndex() {
  if (nodeIndexOf.nodes !== fabric.nodes) nodeIndexOf = { nodes: fabric.nodes, map: new Map(fabric.nodes.map((n) => [n.name, n.id])) };
  return nodeIndexOf.map;
}

// transitColor is a job's colour for its transit nodes: the same hue,
// lighter.
function transitColor(id) {
  const h = (id * 137.508) % 360;
  return `hsl(${h.toFixed(0)}, 65%, 88%)`;
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

// Layouts: x,y per node id, labels, the drawing's size and its unit.
//  - tori and meshes: planes of the two fastest dimensions side by side
//    (Z along a row, W, V… down); a link of another dimension is a tick
//    at each end pointing towards the neighbouring plane, wrap-arounds in
//    the plane are stubs;
//  - fat trees (levels): switch levels as rows, the top level above,
//    hosts at the bottom;
//  - dragonflies (groups): groups on a circle, each group's switches on
//    a small circle, hosts outside their switch;
//  - anything else: a circle.
// opt.aspect is the drawing area's width / height (tori and meshes take
// the arrangement of planes that fills it best); opt.band the height of
// the label band above each plane, in cells (the canvas's labels keep
// 10 screen pixels at the overview).
function layout(f, opt = {}) {
  const dims = f.dims || [];
  if (dims.length >= 1 && f.nodes.every((n) => n.coord)) return torusLayout(f, dims, opt.aspect || 1, opt.band || 0);
  if (f.nodes.some((n) => n.group !== undefined && n.kind === "switch")) return groupLayout(f);
  if (f.nodes.some((n) => n.level > 0)) return levelLayout(f);
  // An imported fabric without levels: levels by distance from the hosts
  // (switches cabled to hosts are level 1), as a fat tree's.
  if (f.nodes.some((n) => n.kind === "switch") && f.nodes.some((n) => n.kind !== "switch")) return levelLayout(withLevels(f));
  const n = f.nodes.length, r = Math.max(200, n * 3);
  const pos = new Array(n);
  f.nodes.forEach((nd, i) => { pos[nd.id] = [r + 20 + r * Math.cos(2 * Math.PI * i / n), r + 20 + r * Math.sin(2 * Math.PI * i / n)]; });
  return { pos, labels: [], w: 2 * r + 40, h: 2 * r + 40, cell: 10 };
}

// withLevels returns f with every node's level set to its hop distance
// from the nearest host.
function withLevels(f) {
  const adj = f.nodes.map(() => []);
  for (const l of f.links) { adj[l.a].push(l.b); adj[l.b].push(l.a); }
  const lev = f.nodes.map((n) => (n.kind === "switch" ? -1 : 0));
  let q = f.nodes.filter((n) => n.kind !== "switch").map((n) => n.id);
  for (let d = 1; q.length; d++) {
    const next = [];
    for (const x of q) for (const y of adj[x]) if (lev[y] < 0) { lev[y] = d; next.push(y); }
    q = next;
  }
  return { ...f, nodes: f.nodes.map((n) => ({ ...n, level: Math.max(0, lev[n.id]) })) };
}

function torusLayout(f, dims, aspect, band) {
  const pos = new Array(f.nodes.length), labels = [];
  const dx = dims[0], dy = dims.length > 1 ? dims[1] : 1;
  const rest = dims.slice(2);
  let planes = 1;
  for (const d of rest) planes *= d;
  const gap = 2, cell = 24;
  const pw = (dx + gap) * cell, ph = (dy + gap + band) * cell;
  // One row of Z planes per value of the further dimensions while that
  // keeps the drawing's shape; otherwise the grid of planes that fills
  // the drawing area best.
  let cols = 1;
  if (rest.length >= 2 && rest[0] * dx <= 4 * dy * (planes / rest[0]) * 2) cols = rest[0];
  else {
    let best = 0;
    for (let k = 1; k <= planes; k++) {
      const fit = Math.min(aspect / (k * pw), 1 / (Math.ceil(planes / k) * ph));
      if (fit > best * 1.0001) { best = fit; cols = k; }
    }
  }
  for (const n of f.nodes) {
    let p = 0, mul = 1;
    for (let i = 2; i < dims.length; i++) { p += n.coord[i] * mul; mul *= dims[i]; }
    const px = (p % cols) * pw, py = Math.floor(p / cols) * ph + band * cell;
    pos[n.id] = [px + cell * (n.coord[0] + 1), py + cell * ((dims.length > 1 ? n.coord[1] : 0) + 1)];
  }
  for (let p = 0; p < planes; p++) {
    const c = []; let q = p;
    for (const d of rest) { c.push(q % d); q = Math.floor(q / d); }
    labels.push({ x: (p % cols) * pw + cell * .5, y: Math.floor(p / cols) * ph + cell * (band + .55),
      text: rest.length ? rest.map((v, i) => "ZWVU"[i] + "=" + c[i]).join(" ") : "" });
  }
  return { pos, labels, w: Math.min(planes, cols) * pw, h: Math.ceil(planes / cols) * ph, cell, torus: true, band };
}

function levelLayout(f) {
  const rows = new Map();
  for (const n of f.nodes) {
    const l = n.level || 0;
    if (!rows.has(l)) rows.set(l, []);
    rows.get(l).push(n.id);
  }
  const levels = [...rows.keys()].sort((a, b) => b - a);
  const widest = Math.max(...[...rows.values()].map((r) => r.length));
  // Rows far enough apart that a wide tree keeps a readable shape
  // (zoom in for the nodes).
  const cell = 24, w = (widest + 1) * cell, gap = Math.max(cell * 4, w * .6 / levels.length), h = (levels.length - 1) * gap + cell * 4;
  const pos = new Array(f.nodes.length), labels = [];
  levels.forEach((l, i) => {
    const r = rows.get(l), y = cell * 2 + i * gap, step = w / (r.length + 1);
    r.forEach((id, k) => { pos[id] = [step * (k + 1), y]; });
    labels.push({ x: 4, y: y - cell * .6, text: l === 0 ? "hosts" : "level " + l });
  });
  return { pos, labels, w, h, cell: Math.min(cell, Math.max(4, w / (widest + 1))) };
}

function groupLayout(f) {
  const groups = new Map(), sw = new Map();
  for (const n of f.nodes) if (n.kind === "switch") {
    const g = n.group || 0;
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(n.id);
  }
  const host = new Map(); // host id → its switch
  for (const l of f.links) {
    const a = f.nodes[l.a], b = f.nodes[l.b];
    if (a.kind !== "switch" && b.kind === "switch") host.set(a.id, b.id);
    if (b.kind !== "switch" && a.kind === "switch") host.set(b.id, a.id);
  }
  const G = groups.size, per = Math.max(...[...groups.values()].map((g) => g.length));
  // Neighbouring groups (with their hosts) must not overlap: the chord
  // between their centres exceeds two group radii and the host ring.
  const cell = 16, rg = Math.max(2 * cell, per * cell * .6);
  const R = G > 1 ? Math.max(6 * cell, (rg + 2 * cell) * 1.15 / Math.sin(Math.PI / G)) : 0;
  const size = 2 * (R + rg + 3 * cell), c = size / 2;
  const pos = new Array(f.nodes.length), labels = [];
  [...groups.keys()].sort((a, b) => a - b).forEach((g, i) => {
    const th = 2 * Math.PI * i / G, gx = c + R * Math.cos(th), gy = c + R * Math.sin(th);
    const ids = groups.get(g);
    ids.forEach((id, k) => {
      const t = 2 * Math.PI * k / ids.length;
      pos[id] = [gx + rg * Math.cos(t), gy + rg * Math.sin(t)];
      sw.set(id, [gx, gy]);
    });
    labels.push({ x: gx - cell, y: gy + 3, text: "g" + g });
  });
  const seen = new Map();
  for (const n of f.nodes) {
    if (n.kind === "switch") continue;
    const s = host.get(n.id);
    if (s === undefined) { pos[n.id] = [c, c]; continue; }
    const k = seen.get(s) || 0; seen.set(s, k + 1);
    const [sx, sy] = pos[s], [gx, gy] = sw.get(s);
    const d = Math.hypot(sx - gx, sy - gy) || 1, ang = (k - 1) * .35;
    const ux = (sx - gx) / d, uy = (sy - gy) / d;
    pos[n.id] = [sx + cell * (ux * Math.cos(ang) - uy * Math.sin(ang)), sy + cell * (uy * Math.cos(ang) + ux * Math.sin(ang))];
  }
  return { pos, labels, w: size, h: size, cell };
}

// linkShape draws link l: a line, ticks between torus planes, or a stub
// for a wrap-around.
function linkShape(L, l, svg, attrs) {
  const a = L.pos[l.a], b = L.pos[l.b];
  if (!L.torus || l.dim < 0) return el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], ...attrs }, svg);
  const far = Math.abs(a[0] - b[0]) > L.cell * 1.5 || Math.abs(a[1] - b[1]) > L.cell * 1.5;
  if (l.dim <= 1) {
    if (!far) return el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], ...attrs }, svg);
    // Wrap-around in the plane: a stub leaving it.
    return el("line", { x1: a[0], y1: a[1], x2: a[0] + (l.dim === 0 ? L.cell * .45 : 0), y2: a[1] + (l.dim === 1 ? L.cell * .45 : 0), ...attrs }, svg);
  }
  // Between planes: a port tick at each end, pointing (diagonally, so
  // it never hides an X or Y link) towards the other plane; one direction
  // per dimension (Z ↘, W ↗, V and U steeper).
  const dirs = [[1, 1], [1, -1], [.45, 1], [1, -.45]];
  const [dx, dy] = dirs[(l.dim - 2) % dirs.length], n = Math.hypot(dx, dy);
  const ux = dx / n, uy = dy / n, r = L.cell * .22, k = L.cell * (l.failed ? .7 : .3); // a failed one reaches out
  return el("path", { d: `M${a[0] + ux * r},${a[1] + uy * r}l${ux * k},${uy * k}M${b[0] - ux * r},${b[1] - uy * r}l${-ux * k},${-uy * k}`, fill: "none", ...attrs }, svg);
}

function draw() {
  const svg = $("#fabric");
  svg.replaceChildren();
  if (!fabric) return;
  const t0 = performance.now();
  // Large fabrics are drawn on a canvas (zoom with the wheel, pan by
  // dragging, hover names what is under the pointer).
  const big = fabric.nodes.length > CANVAS_FROM;
  svg.toggleAttribute("hidden", big); // an SVG element has no .hidden
  $("#fabric-canvas").hidden = !big;
  if (big) {
    drawCanvas();
    lastDrawMs = performance.now() - t0;
    if (!firstDrawnAt) firstDrawnAt = performance.now();
    return;
  }
  const L = layout(fabric, { aspect: (svg.clientWidth || 4) / (svg.clientHeight || 3) });
  svg.setAttribute("viewBox", `0 0 ${L.w} ${L.h}`);
  // Labels at least 12 screen pixels high, whatever the drawing's scale.
  const px = Math.max(L.w / (svg.clientWidth || L.w), L.h / (svg.clientHeight || L.h));
  const fs = Math.max(10, 12 * px);
  for (const lb of L.labels) {
    const t = el("text", { x: lb.x, y: lb.y, class: "plane-label" }, svg);
    t.style.fontSize = fs + "px"; // over the stylesheet's size
    t.textContent = lb.text;
  }
  const mode = $("#heat").value;
  const vals = loads ? (mode === "efi" ? loads.efi : loads.routes) : null;
  const maxv = vals ? Math.max(1, ...vals) : 1;
  const { g, members, root, tree: treeLinks } = groupMarks();
  const jm = jobMarks();
  const dimName = (d) => d >= 0 && fabric.dims ? "XYZWVU"[d] : "";
  for (const l of fabric.links) {
    // In EFI mode the tree keeps the EFI colours and is drawn thicker.
    const tree = treeLinks.has(l.id) ? (mode === "efi" ? " tree-efi" : " tree") : "";
    const shape = linkShape(L, l, svg, { class: "link" + (l.dim >= 2 && L.torus ? " interplane" : "") + (l.failed ? " failed" : "") + tree, "data-link": l.name, "data-dim": l.dim });
    if (vals && mode !== "none" && vals[l.id] > 0 && !l.failed) shape.style.stroke = heat(vals[l.id] / maxv);
    const unit = mode === "efi" ? "EFI" : "routes";
    el("title", {}, shape).textContent = `${l.name}${dimName(l.dim) ? " (" + dimName(l.dim) + ")" : ""}${vals && mode !== "none" ? " — " + (vals[l.id] || 0) + " " + unit : ""}${l.failed ? " — FAILED" : ""}`;
  }
  const inSel = new Set();
  const sj = jobs.find((j) => j.id === selectedJob);
  if (sj) for (const n of [...sj.active, ...sj.transit]) inSel.add(n);
  const jobName = new Map(jobs.map((j) => [j.id, j.name]));
  const r0 = Math.max(2, L.cell * (L.torus ? .22 : .28));
  for (const n of fabric.nodes) {
    const p = L.pos[n.id];
    const transit = n.job && jm.transit.has(n.name), broken = jm.broken.has(n.name);
    const cls = "node" + (n.failed ? " failed" : "") + (members.has(n.name) ? " mc-member" : "") + (n.name === root ? " mc-root" : "") + (n.kind === "switch" && !L.torus ? " switch" : "") +
      (transit ? " transit" : "") + (broken ? " broken" : "");
    const c = el("circle", { cx: p[0], cy: p[1], r: inSel.has(n.name) ? r0 * 1.3 : r0, class: cls, "data-node": n.name, "data-job": n.job || 0 }, svg);
    // Active nodes filled with their job's colour, transit nodes a ring
    // of it round a light fill.
    c.style.fill = transit ? transitColor(n.job) : jobColor(n.job);
    if (transit && !members.has(n.name) && n.name !== root && !broken) c.style.stroke = jobColor(n.job);
    const where = n.coord ? " (" + n.coord.join(",") + ")" : n.group !== undefined ? " (group " + n.group + ")" : n.level !== undefined ? " (level " + n.level + ")" : "";
    const job = n.job ? " — job " + n.job + (jobName.get(n.job) ? " " + jobName.get(n.job) : "") + (transit ? " (transit)" : "") + (broken ? " (broken)" : "") : "";
    const mc = n.name === root ? " — multicast root of " + selectedGroup : members.has(n.name) ? " — member of " + selectedGroup : "";
    el("title", {}, c).textContent = n.name + where + job + mc + (n.failed ? " — FAILED" : "");
    c.addEventListener("click", () => { $("#mcast-form").member.value = n.name; });
    if (n.failed) {
      // A cross, visible at any zoom.
      const d = r0 * 1.6;
      el("path", { d: `M${p[0] - d},${p[1] - d}L${p[0] + d},${p[1] + d}M${p[0] - d},${p[1] + d}L${p[0] + d},${p[1] - d}`, class: "fail-mark" }, svg);
    }
  }
  // A broken job's pair of active nodes with no legal route: a dashed
  // red line between them.
  const byName = nodeIndex();
  for (const pr of jm.pairs) {
    const a = L.pos[byName.get(pr.a)], b = L.pos[byName.get(pr.b)];
    if (!a || !b) continue;
    const ln = el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: "unreachable", "data-pair": pr.a + " " + pr.b, "data-job": pr.job }, svg);
    el("title", {}, ln).textContent = `job ${pr.job} is broken: no legal route from ${pr.a} to ${pr.b}`;
  }
  lastDrawMs = performance.now() - t0;
  setLegend(mode, maxv, g, jm);
}

function setLegend(mode, maxv, g, jm) {
  const unit = mode === "efi" ? "multicast EFI per link" : "routes of running jobs per link";
  $("#legend").innerHTML = (mode === "none" ? "" :
    `${unit}: 0 <span class="legend-box" style="background:${heat(0)}"></span><span class="legend-box" style="background:${heat(.5)}"></span><span class="legend-box" style="background:${heat(1)}"></span> ${maxv}`) +
    ` · <span class="legend-line failed"></span> failed` +
    (jm && jm.transit.size ? ` · <span class="legend-dot transit"></span> transit` : "") +
    (jm && jm.pairs.length ? ` · <span class="legend-line unreachable"></span> no route (broken job)` : "") +
    (g ? ` · <span class="legend-dot mc-root"></span> root <span class="legend-dot mc-member"></span> member of ${esc(g.id)}` : "");
}

// Canvas drawing of large fabrics.
const CANVAS_FROM = 2048;
let lastDrawMs = 0, firstDrawnAt = 0; // ms: the last drawing; page start to the first drawing
const cv = { key: "", L: null, grid: null, lgrid: null, scale: 0, ox: 0, oy: 0 };

// canvasLayout returns the layout of the current fabric (kept while its
// structure stays) and a grid of node ids for hover lookups.
function canvasLayout(W, H) {
  const key = fabric.spec + ":" + fabric.nodes.length + ":" + fabric.links.length + ":" + W + "x" + H;
  if (cv.key !== key) {
    cv.key = key;
    cv.L = layout(fabric, { aspect: W / H, band: 3 });
    cv.scale = 0; // fit on the next draw
    cv.grid = cv.lgrid = null; // built on the first hover (hoverGrids)
  }
  return cv.L;
}

// hoverGrids builds the grids of node ids and link midpoints by layout
// cell that hovering looks up, once per layout (a 98 304-node torus's take
// longer than its drawing).
function hoverGrids() {
  if (cv.grid) return;
  const c = cv.L.cell, grid = new Map(), lgrid = new Map();
  const add = (m, p, id) => {
    const k = cellKey(Math.floor(p[0] / c), Math.floor(p[1] / c)), a = m.get(k);
    if (a) a.push(id); else m.set(k, [id]);
  };
  for (const n of fabric.nodes) add(grid, cv.L.pos[n.id], n.id);
  // Link midpoints (a tick's end for links between torus planes).
  for (const l of fabric.links) add(lgrid, linkMid(cv.L, l), l.id);
  cv.grid = grid; cv.lgrid = lgrid;
}

// cellKey numbers layout cell (gx, gy).
function cellKey(gx, gy) { return gx * 1048576 + gy; }

// linkMid is where hovering finds link l on the canvas.
function linkMid(L, l) {
  const a = L.pos[l.a], b = L.pos[l.b];
  if (L.torus && (l.dim >= 2 || Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) > L.cell * 1.5)) {
    return [a[0] + L.cell * .35 * (l.dim === 1 ? 0 : 1), a[1] + L.cell * .35 * (l.dim === 0 ? 0 : l.dim === 3 ? -1 : 1)];
  }
  return [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2];
}

// HOVER_PX: hovering names the nearest node or link within this many
// screen pixels, at any zoom.
const HOVER_PX = 6;

// nearestAt returns the node or link (by its midpoint) nearest to canvas
// point (x, y) within HOVER_PX screen pixels or, zoomed in, within the
// node's or link's own reach: { node } or { link }, or null.
function nearestAt(x, y) {
  if (!cv.L) return null;
  hoverGrids();
  const L = cv.L, lx = (x - cv.ox) / cv.scale, ly = (y - cv.oy) / cv.scale;
  const reach = Math.max(L.cell * .35, HOVER_PX / cv.scale);
  const gx = Math.floor(lx / L.cell), gy = Math.floor(ly / L.cell), k = Math.min(64, Math.ceil(reach / L.cell));
  let best = null, bd = reach * reach;
  for (let i = -k; i <= k; i++) for (let j = -k; j <= k; j++) {
    const key = cellKey(gx + i, gy + j);
    for (const id of cv.grid.get(key) || []) {
      const p = L.pos[id], d = (p[0] - lx) ** 2 + (p[1] - ly) ** 2;
      if (d < bd) { bd = d; best = { node: fabric.nodes[id] }; }
    }
    for (const id of cv.lgrid.get(key) || []) {
      const m = linkMid(L, fabric.links[id]), d = (m[0] - lx) ** 2 + (m[1] - ly) ** 2;
      if (d < bd) { bd = d; best = { link: fabric.links[id] }; }
    }
  }
  return best;
}

// linkAt and nodeAt: what nearestAt finds, if a link (node).
function linkAt(x, y) { const h = nearestAt(x, y); return h && h.link ? h.link : null; }
function nodeAt(x, y) { const h = nearestAt(x, y); return h && h.node ? h.node : null; }

function drawCanvas() {
  const canvas = $("#fabric-canvas"), dpr = window.devicePixelRatio || 1;
  const W = canvas.clientWidth || 800, H = canvas.clientHeight || 600;
  const L = canvasLayout(W, H);
  canvas.width = W * dpr; canvas.height = H * dpr;
  if (!cv.scale) {
    // Fit, centred: the layout's label bands keep the top row's labels
    // inside.
    cv.scale = Math.min(W / L.w, H / L.h);
    cv.ox = (W - L.w * cv.scale) / 2; cv.oy = (H - L.h * cv.scale) / 2;
  }
  const c = canvas.getContext("2d");
  c.setTransform(dpr * cv.scale, 0, 0, dpr * cv.scale, dpr * cv.ox, dpr * cv.oy);
  c.fillStyle = "#fff";
  c.fillRect(-cv.ox / cv.scale, -cv.oy / cv.scale, W / cv.scale, H / cv.scale);
  const mode = $("#heat").value;
  const vals = loads ? (mode === "efi" ? loads.efi : loads.routes) : null;
  let maxv = 1;
  if (vals) for (const v of vals) if (v > maxv) maxv = v;
  const px = 1 / cv.scale; // one screen pixel in layout units
  const gm = groupMarks(), jm = jobMarks();
  cv.gm = gm; cv.jm = jm; // for hovering
  // Links by colour: plain ones in one path, loaded ones in 8 heat bins,
  // failed ones last and wide so they show at any zoom.
  const bins = Array.from({ length: 9 }, () => []), failed = [], tree = [];
  for (const l of fabric.links) {
    if (gm.tree.has(l.id)) tree.push(l);
    if (l.failed) failed.push(l);
    else if (vals && mode !== "none" && vals[l.id] > 0) bins[1 + Math.min(7, Math.floor(8 * vals[l.id] / (maxv + 1)))].push(l);
    else bins[0].push(l);
  }
  const path = (ls) => {
    c.beginPath();
    for (const l of ls) {
      const a = L.pos[l.a], b = L.pos[l.b];
      if (L.torus && l.dim >= 2) {
        c.moveTo(a[0], a[1]); c.lineTo(a[0] + L.cell * .3, a[1] + L.cell * .3 * (l.dim === 2 ? 1 : -1));
      } else if (Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) > L.cell * 1.5 && L.torus) {
        c.moveTo(a[0], a[1]); c.lineTo(a[0] + (l.dim === 0 ? L.cell * .45 : 0), a[1] + (l.dim === 1 ? L.cell * .45 : 0));
      } else { c.moveTo(a[0], a[1]); c.lineTo(b[0], b[1]); }
    }
  };
  const stroke = (ls, style, width) => {
    if (!ls.length) return;
    path(ls);
    c.strokeStyle = style; c.lineWidth = width; c.stroke();
  };
  // Rings of at least min screen pixels round points (layout units r).
  const rings = (pts, r, min, style, width, fill) => {
    if (!pts.length) return;
    c.beginPath();
    const rr = Math.max(r, min * px);
    for (const p of pts) { c.moveTo(p[0] + rr, p[1]); c.arc(p[0], p[1], rr, 0, 2 * Math.PI); }
    if (fill) { c.fillStyle = fill; c.fill(); }
    c.strokeStyle = style; c.lineWidth = width; c.stroke();
  };
  // Zoomed out over many links, plain ones are faint, so their density
  // shows the structure (pods, groups) instead of a grey mass.
  c.globalAlpha = px > L.cell / 4 ? Math.min(1, Math.max(.04, 3000 / (bins[0].length + 1))) : 1;
  stroke(bins[0], "#607d8b", Math.max(px, L.cell / 16));
  c.globalAlpha = 1;
  for (let i = 1; i < 9; i++) stroke(bins[i], heat((i - .5) / 8), Math.max(1.5 * px, L.cell / 10));
  // The selected group's tree: orange (in EFI mode its links keep their
  // EFI colours, drawn wider with an orange edge), at least 3 pixels wide.
  if (tree.length) {
    stroke(tree, "#ff6f00", Math.max(3 * px, L.cell / 6));
    if (mode === "efi" && vals) for (const l of tree) stroke([l], heat(vals[l.id] / maxv), Math.max(1.5 * px, L.cell / 10));
  }
  // Nodes: job colours (transit nodes lighter, with a ring of the job's
  // colour once they are big enough to show one); at a zoom where a node
  // is under 2 pixels, squares.
  const r = L.cell * .22, tiny = r / px < 1;
  const byColour = new Map(), transitRings = new Map();
  for (const n of fabric.nodes) {
    const transit = n.job && jm.transit.has(n.name);
    const col = n.failed ? "#fff" : transit ? transitColor(n.job) : jobColor(n.job);
    if (!byColour.has(col)) byColour.set(col, []);
    byColour.get(col).push(n);
    if (transit && !tiny) {
      const rc = jobColor(n.job);
      if (!transitRings.has(rc)) transitRings.set(rc, []);
      transitRings.get(rc).push(L.pos[n.id]);
    }
  }
  for (const [col, ns] of byColour) {
    c.fillStyle = col;
    c.beginPath();
    for (const n of ns) {
      const p = L.pos[n.id];
      if (tiny) c.rect(p[0] - px, p[1] - px, 2 * px, 2 * px);
      else { c.moveTo(p[0] + r, p[1]); c.arc(p[0], p[1], r, 0, 2 * Math.PI); }
    }
    c.fill();
  }
  for (const [col, pts] of transitRings) rings(pts, r * .8, 0, col, r * .45);
  stroke(failed, "#d00", Math.max(3 * px, L.cell / 8));
  // A ring of fixed screen size round each failed link: visible however
  // far out the view is zoomed.
  c.beginPath();
  for (const l of failed) {
    const m = linkMid(L, l), rr = Math.max(7 * px, L.cell * .3);
    c.moveTo(m[0] + rr, m[1]); c.arc(m[0], m[1], rr, 0, 2 * Math.PI);
  }
  c.lineWidth = Math.max(2 * px, L.cell / 12); c.stroke();
  c.strokeStyle = "#d00"; c.lineWidth = Math.max(2 * px, L.cell / 10);
  c.beginPath();
  for (const n of fabric.nodes) if (n.failed) {
    const p = L.pos[n.id], d = Math.max(r, 4 * px);
    c.moveTo(p[0] - d, p[1] - d); c.lineTo(p[0] + d, p[1] + d); c.moveTo(p[0] - d, p[1] + d); c.lineTo(p[0] + d, p[1] - d);
  }
  c.stroke();
  // Broken jobs: their nodes ringed in dark red, their pair without a
  // legal route joined by a dashed dark-red line with a ring of fixed
  // screen size at each end.
  const byName = nodeIndex();
  const brokenPts = [];
  for (const name of jm.broken) { const id = byName.get(name); if (id !== undefined) brokenPts.push(L.pos[id]); }
  rings(brokenPts, r * 1.25, 3, "#b00020", Math.max(1.5 * px, L.cell / 14));
  let pairs = 0;
  if (jm.pairs.length) {
    c.beginPath();
    const ends = [];
    for (const pr of jm.pairs) {
      const a = L.pos[byName.get(pr.a)], b = L.pos[byName.get(pr.b)];
      if (!a || !b) continue;
      c.moveTo(a[0], a[1]); c.lineTo(b[0], b[1]); ends.push(a, b); pairs++;
    }
    c.setLineDash([6 * px, 4 * px]);
    c.strokeStyle = "#b00020"; c.lineWidth = Math.max(2.5 * px, L.cell / 10); c.stroke();
    c.setLineDash([]);
    rings(ends, r * 1.6, 8, "#b00020", Math.max(2.5 * px, L.cell / 10));
  }
  // The selected group's members (orange rings) and root (a wider black
  // ring), of fixed screen size so they show at the overview.
  const memberPts = [], rootPts = [];
  for (const name of gm.members) { const id = byName.get(name); if (id !== undefined) memberPts.push(L.pos[id]); }
  if (gm.root && byName.has(gm.root)) rootPts.push(L.pos[byName.get(gm.root)]);
  rings(memberPts, r * 1.3, 5, "#ff6f00", Math.max(2.5 * px, L.cell / 10));
  rings(rootPts, r * 1.7, 9, "#000", Math.max(3.5 * px, L.cell / 8));
  // Labels: at least 10 screen pixels high, drawn only when they fit in
  // their band above the plane (or, on other layouts, zoomed in).
  const labels = [];
  const fs = Math.max(10 * px, L.cell * .5);
  if (L.labels.length && (L.band ? fs <= (L.band + .55) * L.cell : px < L.cell / 3)) {
    c.fillStyle = "#666"; c.font = `${fs}px sans-serif`; c.textBaseline = "alphabetic";
    for (const lb of L.labels) {
      c.fillText(lb.text, lb.x, lb.y);
      const w = c.measureText(lb.text).width;
      labels.push([lb.x * cv.scale + cv.ox, (lb.y - fs) * cv.scale + cv.oy, (lb.x + w) * cv.scale + cv.ox, lb.y * cv.scale + cv.oy]);
    }
  }
  cv.labelBoxes = labels; // screen boxes [x0, y0, x1, y1] of the labels drawn
  setLegend(mode, maxv, gm.g, jm);
  Object.assign(canvas.dataset, { drawn: fabric.nodes.length, tree: tree.length, members: memberPts.length, root: rootPts.length ? gm.root : "",
    transit: [...jm.transit].filter((nm) => byName.has(nm)).length, broken: brokenPts.length, pairs });
}

(function canvasControls() {
  const canvas = $("#fabric-canvas"), tip = $("#tip");
  let drag = null;
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const f = e.deltaY < 0 ? 1.25 : 0.8, x = e.offsetX, y = e.offsetY;
    cv.ox = x - (x - cv.ox) * f; cv.oy = y - (y - cv.oy) * f; cv.scale *= f;
    drawCanvas();
  }, { passive: false });
  canvas.addEventListener("mousedown", (e) => { drag = [e.offsetX - cv.ox, e.offsetY - cv.oy]; });
  window.addEventListener("mouseup", () => { drag = null; });
  canvas.addEventListener("mousemove", (e) => {
    if (drag) { cv.ox = e.offsetX - drag[0]; cv.oy = e.offsetY - drag[1]; drawCanvas(); return; }
    const h = nearestAt(e.offsetX, e.offsetY), n = h && h.node, l = h && h.link;
    tip.hidden = !n && !l;
    if (n) {
      const jm = cv.jm || jobMarks(), gm = cv.gm || groupMarks();
      const job = n.job ? " — job " + n.job + (jm.transit.has(n.name) ? " (transit)" : "") + (jm.broken.has(n.name) ? " (broken)" : "") : "";
      const mc = n.name === gm.root ? " — multicast root of " + selectedGroup : gm.members.has(n.name) ? " — member of " + selectedGroup : "";
      tip.textContent = n.name + (n.coord ? " (" + n.coord.join(",") + ")" : "") + job + mc + (n.failed ? " — FAILED" : "");
    } else if (l) {
      const mode = $("#heat").value, vals = loads ? (mode === "efi" ? loads.efi : loads.routes) : null;
      tip.textContent = l.name + (vals ? " — " + (vals[l.id] || 0) + (mode === "efi" ? " EFI" : " routes") : "") + (l.failed ? " — FAILED" : "");
    } else return;
    tip.style.left = e.pageX + 12 + "px"; tip.style.top = e.pageY + 12 + "px";
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("dblclick", () => { cv.scale = 0; drawCanvas(); });
  canvas.addEventListener("click", (e) => { const n = nodeAt(e.offsetX, e.offsetY); if (n) $("#mcast-form").member.value = n.name; });
})();

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
    tr.innerHTML = `<td><span class="swatch" style="background:${jobColor(j.id)}"></span>${j.id}${j.name ? " " + esc(j.name) : ""}${j.reachable ? "" : " ⚠"}</td><td>${j.active.length}</td><td>${j.transit.length}</td><td>${j.stats.diameter}</td><td>${j.stats.pi_max}</td><td class="rs-${rs}"${why}>${rs}</td><td>${migrate}<button data-release="${j.id}">release</button></td>`;
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
    // Everything at once: a large fabric's answers take a while.
    let f, health, audit;
    [f, jobs, groups, loads, health, audit] = await Promise.all([api("GET", "/api/fabric?compact=1"), api("GET", "/api/jobs"), api("GET", "/api/mcast"),
      api("GET", "/api/fabric/load"), fetch("/healthz").then((x) => x.json()).catch(() => ({})), api("GET", "/api/audit?limit=1000")]);
    fabric = gridFabric(f);
    if (!heatChosen) $("#heat").value = fabric.jobs ? "routes" : "efi";
    const busy = fabric.nodes.filter((n) => n.job).length;
    let role = "";
    if (health.store === "etcd") {
      role = health.role === "leader" ? " · leader" : ` · standby of ${health.leader || "(no leader now)"}`;
      if (health.stale) role += " · store unreachable: " + (health.error || "");
    }
    $("#summary").textContent = `${fabric.spec} · ${fabric.rules} · ${fabric.nodes.length} nodes, ${busy} busy · ${jobs.length} jobs · ${groups.length} groups${role}`;
    // Forms only for what the fabric supports: a fabric that refuses jobs
    // shows why instead of the job form.
    $("#alloc-form").hidden = !fabric.jobs;
    $("#jobs").hidden = $("#jobs-title").hidden = !fabric.jobs && jobs.length === 0;
    $("#no-jobs").hidden = fabric.jobs;
    $("#no-jobs").textContent = fabric.jobs ? "" : "Jobs: " + (fabric.no_jobs || "this fabric takes no jobs");
    // The failure field's example names a real link and node of this fabric.
    if (fabric.links.length && fabric.nodes.length) {
      $("#fail-form").target.placeholder = `${fabric.links[0].name} or ${fabric.nodes[fabric.nodes.length - 1].name}`;
      const host = fabric.nodes.find((n) => n.kind !== "switch") || fabric.nodes[0];
      $("#mcast-form").member.placeholder = `node name, e.g. ${host.name}`;
    }
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
    const jobs = (r.jobs || []).map((x) => x.result === "broken"
      ? `job ${x.id} broken${x.unreachable ? ` (no route ${x.unreachable[0]} → ${x.unreachable[1]})` : ""}`
      : `job ${x.id} ${x.state || x.result}${x.transit_added ? ` (transit +${x.transit_added.join(" ")})` : ""}`);
    const groups = (r.groups || []).map((g) => `group ${g.id} ${g.old_root || "-"} → ${g.new_root || "-"}${g.state === "Destroying" ? " (destroying)" : ""}`);
    status(`${repair ? "repaired" : "failed"} ${target}; ${jobs.concat(groups).join("; ") || "no job or group touched"}`);
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

// The link colour follows the fabric until one is chosen: routes of
// running jobs where it takes jobs, multicast EFI where it takes none.
let heatChosen = false;
$("#heat").addEventListener("change", () => { heatChosen = true; draw(); });
refresh();
setInterval(() => { if (!unauthorized) refresh(); }, 3000);
