// The monitor's web view (monitor/web.py): draws the fabric from the snapshot of
// /api/events (Server-Sent Events) and updates it, the verdicts, the injected faults and
// the timeline on every event, without reloading. Plain JavaScript, no library.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
// utilisation (0..1, above 1 when over capacity) -> colour; GOR's safety threshold is 75%
const UTIL_SCALE = [[0.25, "#9ecae1"], [0.5, "#4292c6"], [0.75, "#08519c"], [1.0, "#f28e2b"],
                    [Infinity, "#6a3d9a"]];
const UNKNOWN_COLOUR = "#9e9e9e";
const STATE_STYLE = {            // states the probes give (monitor.evidence.LINK_STATES)
  lossy: {colour: "#d62728", dash: "8 4", label: "lossy"},
  corrupting: {colour: "#d62728", dash: "2 3", label: "corrupting"},
  dead: {colour: "#7f0000", dash: "12 3 2 3", label: "dead"},
};

let drawing = null;   // {links: Map id -> parts, nodes: Map name -> element}

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function utilColour(util) {
  if (util === null || util === undefined) return UNKNOWN_COLOUR;
  for (const [limit, colour] of UTIL_SCALE) if (util < limit) return colour;
  return UTIL_SCALE[UTIL_SCALE.length - 1][1];
}

function pct(x) { return x === null || x === undefined ? "?" : Math.round(x * 100) + "%"; }

function along(l, f, side) {     // point at fraction f of a link's line, moved `side` px to its right
  const dx = l.x2 - l.x1, dy = l.y2 - l.y1, len = Math.hypot(dx, dy) || 1;
  return [l.x1 + dx * f - dy / len * side, l.y1 + dy * f + dx / len * side, dx / len, dy / len];
}

function buildDrawing(fabric) {
  const svg = document.getElementById("fabric");
  for (const g of svg.querySelectorAll("g.layer")) g.remove();
  svg.setAttribute("viewBox", `0 0 ${fabric.width} ${fabric.height}`);
  svg.style.minWidth = Math.min(fabric.width * 0.6, 4000) + "px";   // big fabrics scroll sideways
  const linksLayer = el("g", {class: "layer", id: "links"}, svg);
  const nodesLayer = el("g", {class: "layer", id: "nodes"}, svg);
  const marksLayer = el("g", {class: "layer", id: "marks"}, svg);
  drawing = {links: new Map(), nodes: new Map()};
  for (const l of fabric.links) {
    const g = el("g", {class: "link", "data-link": l.id, "data-src": l.src, "data-dst": l.dst,
                       "data-kind": l.kind, "data-state": "unknown", "data-util": "", "data-alarm": "0"},
                 linksLayer);
    const title = el("title", {}, g);
    el("line", {class: "halo", x1: l.x1, y1: l.y1, x2: l.x2, y2: l.y2}, g);
    const wire = el("line", {class: "wire", x1: l.x1, y1: l.y1, x2: l.x2, y2: l.y2}, g);
    const [ax, ay, ux, uy] = along(l, 0.62, 0);
    const arrow = el("polygon", {class: "arrow", points:
      `${ax + ux * 7},${ay + uy * 7} ${ax - uy * 4},${ay + ux * 4} ${ax + uy * 4},${ay - ux * 4}`}, g);
    const [bx, by] = along(l, l.kind === "fabric" ? 0.22 : 0.3, 9);
    const badge = el("g", {class: "badge", "data-alarm-link": l.id, "data-level": "0"}, marksLayer);
    el("circle", {class: "badge-bg", cx: bx, cy: by, r: 8}, badge);
    const badgeText = el("text", {class: "badge-text", x: bx, y: by + 3.5}, badge);
    const [lx, ly] = along(l, 0.45, 12);
    const label = el("text", {class: "link-label", x: lx, y: ly, "text-anchor": "middle",
                              "data-label-link": l.id}, marksLayer);
    drawing.links.set(l.id, {g, title, wire, arrow, badge, badgeText, label, info: l});
  }
  for (const n of fabric.nodes) {
    const g = el("g", {class: "node", "data-node": n.name, "data-role": n.role, "data-up": "1"}, nodesLayer);
    el("title", {}, g).textContent = n.role === "nic" ? `${n.name} (NIC of ${n.host}, rail ${n.rail})`
                                                      : `${n.role} ${n.name}`;
    if (n.role === "nic") {
      el("circle", {cx: n.x, cy: n.y, r: n.w / 2}, g);
      el("text", {x: n.x, y: n.y}, g).textContent = n.rail;
    } else {
      el("rect", {x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h, rx: 3}, g);
      const cross = el("g", {class: "cross"}, g);        // under the name, which stays readable
      el("line", {class: "cross-line", x1: n.x - n.w / 2, y1: n.y - n.h / 2, x2: n.x + n.w / 2, y2: n.y + n.h / 2}, cross);
      el("line", {class: "cross-line", x1: n.x + n.w / 2, y1: n.y - n.h / 2, x2: n.x - n.w / 2, y2: n.y + n.h / 2}, cross);
      const ty = n.role === "server" ? n.y + n.h / 2 + 13 : n.y;
      el("text", {x: n.x, y: ty, class: "node-label"}, g).textContent = n.label;
      el("text", {class: "down-label", x: n.x, y: n.role === "spine" || n.role === "core" ? n.y - n.h / 2 - 9 : n.y + n.h / 2 + 11},
         g).textContent = "DOWN";
    }
    drawing.nodes.set(n.name, g);
  }
}

function updateLinks(links) {
  for (const [id, st] of Object.entries(links)) {
    const parts = drawing.links.get(id);
    if (!parts) continue;
    const style = STATE_STYLE[st.state];
    const util = st.util;
    const colour = style ? style.colour : utilColour(util);
    const width = 2 + 3 * Math.min(util || 0, 1.2);
    parts.g.setAttribute("data-state", st.state);
    parts.g.setAttribute("data-util", util === null ? "" : String(util));
    parts.g.setAttribute("data-alarm", String(st.alarm));
    parts.wire.setAttribute("stroke", colour);
    parts.wire.setAttribute("stroke-width", String(style ? Math.max(width, 3) : width));
    parts.wire.setAttribute("opacity", st.state === "unknown" && util === null ? "0.55" : "1");
    if (style) parts.wire.setAttribute("stroke-dasharray", style.dash);
    else parts.wire.removeAttribute("stroke-dasharray");
    parts.arrow.setAttribute("fill", colour);
    parts.badge.setAttribute("data-level", String(st.alarm));
    parts.badgeText.textContent = st.alarm ? String(st.alarm) : "";
    parts.badge.querySelector("circle").setAttribute("class", `badge-bg level-${st.alarm}`);
    parts.label.textContent = style ? style.label + (st.loss ? " " + pct(st.loss) : "") : "";
    parts.title.textContent = `${id}: utilisation ${pct(util)}, ${st.state}` +
      (st.loss !== null ? `, probe loss ${pct(st.loss)}` : "") + (st.alarm ? `, GOR alarm level ${st.alarm}` : "");
  }
}

function updateNodes(switches) {
  for (const [name, up] of Object.entries(switches)) {
    const g = drawing.nodes.get(name);
    if (g) g.setAttribute("data-up", up ? "1" : "0");
  }
}

function markTargets(attr, rows) {      // attr: data-named | data-injected
  for (const e of document.querySelectorAll(`#fabric [${attr}]`)) e.removeAttribute(attr);
  for (const row of rows) {
    for (const id of row.targets.links) { const p = drawing.links.get(id); if (p) p.g.setAttribute(attr, "1"); }
    for (const name of row.targets.nodes) { const g = drawing.nodes.get(name); if (g) g.setAttribute(attr, "1"); }
  }
}

function cell(tr, text) { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); return td; }

function when(t) { return `+${t.toFixed(1)} s`; }

function updateVerdicts(verdicts) {
  const body = document.querySelector("#verdicts tbody");
  body.replaceChildren();
  for (const v of verdicts) {
    const tr = document.createElement("tr");
    tr.dataset.component = v.component;
    tr.dataset.kind = v.kind;
    cell(tr, v.kind);
    cell(tr, v.component).className = "name";
    cell(tr, pct(v.confidence));
    const ul = document.createElement("ul");
    for (const line of v.evidence) { const li = document.createElement("li"); li.textContent = line; ul.appendChild(li); }
    cell(tr, "").appendChild(ul);
    cell(tr, when(v.t_rel_s)).className = "when";
    body.appendChild(tr);
  }
  document.getElementById("verdicts-empty").hidden = verdicts.length > 0;
  markTargets("data-named", verdicts);
}

function updateFaults(faults) {
  const body = document.querySelector("#faults tbody");
  body.replaceChildren();
  for (const f of faults) {
    const tr = document.createElement("tr");
    tr.dataset.fault = f.name;
    tr.dataset.component = f.component;
    cell(tr, f.name).className = "name";
    cell(tr, f.kind + (f.detail ? ` (${f.detail})` : ""));
    cell(tr, f.component).className = "name";
    cell(tr, when(f.t_rel_s)).className = "when";
    body.appendChild(tr);
  }
  document.getElementById("faults-empty").hidden = faults.length > 0;
  markTargets("data-injected", faults);
}

function updateTimeline(events) {      // newest first
  const ol = document.getElementById("timeline");
  ol.replaceChildren();
  for (const ev of events) {
    const li = document.createElement("li");
    li.dataset.kind = ev.kind;
    li.dataset.eventId = ev.id;
    const t = document.createElement("span");
    t.className = "when";
    t.textContent = `${ev.wall} (${when(ev.t_rel_s)})`;
    li.appendChild(t);
    li.appendChild(document.createTextNode(ev.text));
    ol.appendChild(li);
  }
  document.getElementById("timeline-empty").hidden = events.length > 0;
}

function apply(snap) {
  if (snap.fabric) buildDrawing(snap.fabric);
  if (!drawing) return;
  document.getElementById("title").textContent = snap.title;
  updateLinks(snap.links);
  updateNodes(snap.switches);
  updateVerdicts(snap.verdicts);
  updateFaults(snap.faults);
  updateTimeline(snap.events);
  const status = document.getElementById("status");
  status.dataset.version = snap.version;
  status.className = "live";
  status.textContent = `live · version ${snap.version} · ${when(snap.t_rel_s)} since the monitor started`;
}

function connect() {
  const source = new EventSource("api/events");
  source.addEventListener("state", (e) => apply(JSON.parse(e.data)));
  source.onerror = () => {
    const status = document.getElementById("status");
    status.className = "lost";
    status.textContent = "connection lost: reconnecting…";
  };
}

connect();
