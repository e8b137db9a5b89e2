"""The web view's drawing of a fabric: where each switch, server and NIC sits on the page
and where each link direction is drawn, and which drawn things a name points at.

Layered like ``topo/draw.py`` (its positions of the switches are reused): cores on top
(a fabric with a core tier; the rows below move down by :data:`TIER_PITCH`), then spines,
leaves grouped by block, servers at the bottom with one port (a small circle) per NIC. Every cable is drawn as two lines side by side, one per direction, each on the
right-hand side of its direction of travel, so both directions stay visible. Sizes are
SVG user units (the page scales them).

>>> from topo.model import build_fabric
>>> d = layout(build_fabric())
>>> [n["name"] for n in d.nodes if n["role"] == "spine"], len(d.link_ids)
(['s0', 's1'], 32)
>>> d.resolve("b0r0l0:3->s0"), d.targets("switch s1")
(['b0r0l0->s0'], {'links': [], 'nodes': ['s1']})
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from monitor.evidence import LinkDir
from topo.draw import MAX_DRAWN_HOSTS, _positions as switch_positions
from topo.model import Fabric

MARGIN_X = 70.0
Y_SPINE, Y_LEAF, Y_SERVER = 80.0, 290.0, 510.0
SWITCH_W, SWITCH_H = 86.0, 30.0
SERVER_H = 34.0
NIC_R = 6.0
NIC_PITCH = 22.0
DIRECTION_OFFSET = 3.5        # each direction's line sits this far to the right of the cable
PARALLEL_PITCH = 12.0         # between parallel cables of one leaf-spine pair
MIN_SLOT = 170.0              # width of one leaf's slot
TIER_PITCH = Y_LEAF - Y_SPINE  # a core row above the spines moves every row down this much


@dataclass(slots=True)
class Drawing:
    """A fabric's drawing: ``nodes`` (dicts: name, role, x, y, w, h, label, ...), ``links``
    (one dict per direction: id, src, dst, kind, cable, x1, y1, x2, y2), the canvas size,
    and the names that resolve to drawn link directions."""

    width: float
    height: float
    nodes: list[dict[str, Any]]
    links: list[dict[str, Any]]
    aliases: dict[str, list[str]] = field(default_factory=dict)
    port_peer: dict[tuple[str, int], str] = field(default_factory=dict)
    hosts_drawn: bool = True
    node_of: dict[str, str] = field(default_factory=dict)
    """A dual-port NIC's port interface → the NIC's drawn node (its port 0's name)."""

    @property
    def link_ids(self) -> list[str]:
        """Every drawn link direction's name."""
        return [link["id"] for link in self.links]

    def resolve(self, text: str) -> list[str]:
        """The drawn direction(s) a link-direction name stands for (``[]``: known, not
        drawn); ``ValueError`` naming it when the fabric has no such direction."""
        key = str(LinkDir.parse(text))
        if key not in self.aliases:
            example = self.links[0]["id"] if self.links else "b0r0l0->s0"
            raise ValueError(f"no link direction {text!r} in this fabric (names like {example!r})")
        return list(self.aliases[key])

    def targets(self, component: str) -> dict[str, list[str]]:
        """The drawn links and nodes a component name points at (see
        :func:`monitor.evidence.component`); empty for what is not drawn."""
        word, _, rest = component.strip().partition(" ")
        links: list[str] = []
        nodes: list[str] = []
        drawn_nodes = {n["name"] for n in self.nodes}
        try:
            if word == "link":
                links = self.resolve(rest)
            elif word == "cable":
                a, _, b = rest.partition("<->")
                links = self.resolve(f"{a}->{b}") + self.resolve(f"{b}->{a}")
            elif word == "port":
                sw, _, port = rest.partition(":")
                peer = self.port_peer.get((sw, int(port)))
                links = self.resolve(f"{sw}:{port}->{peer}") if peer else []
                nodes = [sw]
            elif word in ("switch", "nic", "agent", "route"):
                first = rest.split(" ")[0]
                nodes = [self.node_of.get(first, first)]
        except ValueError:
            links = []
        return {"links": links, "nodes": [n for n in nodes if n in drawn_nodes]}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the page draws."""
        return {"width": self.width, "height": self.height, "nodes": self.nodes, "links": self.links,
                "hosts_drawn": self.hosts_drawn}


def layout(fab: Fabric) -> Drawing:
    """The drawing of ``fab``; servers are left out above ``topo.draw.MAX_DRAWN_HOSTS``
    (their NIC links then resolve to nothing)."""
    with_hosts = len(fab.hosts) <= MAX_DRAWN_HOSTS
    rails = fab.spec.rails
    server_w = max(60.0, NIC_PITCH * rails + 14.0)
    pos = switch_positions(fab, with_hosts=False)
    leaves_in_block: dict[int, list[str]] = defaultdict(list)
    for leaf in fab.leaves:
        leaves_in_block[leaf.block or 0].append(leaf.name)
    hosts_in_block: dict[int, list[str]] = defaultdict(list)
    for h in fab.hosts:
        hosts_in_block[h.block].append(h.name)
    n_slots = len(fab.leaves) + 0.5 * (fab.spec.blocks - 1)
    slot = MIN_SLOT
    if with_hosts:
        for b, names in hosts_in_block.items():
            slot = max(slot, len(names) * (server_w + 20.0) / max(len(leaves_in_block[b]), 1))
    width = round(2 * MARGIN_X + n_slots * slot, 1)
    inner = width - 2 * MARGIN_X

    def px(x: float) -> float:
        return round(MARGIN_X + x * inner, 1)

    cores = list(fab.cores)
    top = TIER_PITCH if cores else 0.0          # the core row takes the spines' place
    row_y = {"core": Y_SPINE, "spine": Y_SPINE + top, "leaf": Y_LEAF + top}
    nodes: list[dict[str, Any]] = []
    centre: dict[str, tuple[float, float]] = {}
    for sw in cores + fab.spines + fab.leaves:
        x, y = px(pos[sw.name][0]), row_y[sw.role]
        centre[sw.name] = (x, y)
        nodes.append({"name": sw.name, "role": sw.role, "x": x, "y": y, "w": SWITCH_W, "h": SWITCH_H,
                      "label": sw.name, "block": sw.block, "rail": sw.rail})
    nic_of: dict[tuple[str, int], str] = {}
    node_of: dict[str, str] = {}
    if with_hosts:
        slot_frac = 1.0 / max(n_slots, 1.0)
        for b, names in hosts_in_block.items():
            xs = [pos[n][0] for n in leaves_in_block[b]] or [0.5]
            lo, hi = min(xs) - slot_frac / 2, max(xs) + slot_frac / 2
            for i, name in enumerate(names):
                x = px(lo + (hi - lo) * (i + 0.5) / len(names))
                host = fab.host(name)
                nodes.append({"name": name, "role": "server", "x": x, "y": Y_SERVER + top, "w": server_w,
                              "h": SERVER_H, "label": name, "block": host.block, "rail": None})
                for nic in host.nics:
                    nx_ = round(x + (nic.rail - (len(host.nics) - 1) / 2) * NIC_PITCH, 1)
                    ny = Y_SERVER + top - SERVER_H / 2
                    centre[nic.intf] = (nx_, ny)
                    nic_of[(name, nic.rail)] = nic.intf
                    for port in getattr(nic, "ports", ()):     # dual-port: one circle, both ports
                        centre[port.intf] = (nx_, ny)
                        node_of[port.intf] = nic.intf
                    nodes.append({"name": nic.intf, "role": "nic", "x": nx_, "y": ny, "w": 2 * NIC_R,
                                  "h": 2 * NIC_R, "label": f"r{nic.rail}", "block": host.block,
                                  "rail": nic.rail, "host": name})
    links: list[dict[str, Any]] = []
    aliases: dict[str, list[str]] = defaultdict(list)
    port_peer: dict[tuple[str, int], str] = {}
    cables = list(fab.links())
    per_pair: dict[tuple[str, str], int] = defaultdict(int)
    for c in cables:
        per_pair[(c.a, c.b)] += 1
    index_in_pair: dict[tuple[str, str], int] = defaultdict(int)
    # fabric cables first (drawn under the NIC links), then NIC links
    for c in sorted(cables, key=lambda c: c.kind != "fabric"):
        if c.kind == "host":
            nic = _nic_port_intf(fab, c) or nic_of.get((c.b, c.b_port)) \
                or fab.host(c.b).nics[c.b_port].intf
            ends = [(c.a, c.a_port), (nic, None)]
        else:
            ends = [(c.a, c.a_port), (c.b, c.b_port)]
        (a, a_port), (b, b_port) = ends
        if a_port is not None:
            port_peer[(a, a_port)] = b
        if b_port is not None:
            port_peer[(b, b_port)] = a
        parallel = per_pair[(c.a, c.b)] > 1
        j = index_in_pair[(c.a, c.b)]
        index_in_pair[(c.a, c.b)] += 1
        drawn = a in centre and b in centre
        shift = (j - (per_pair[(c.a, c.b)] - 1) / 2) * PARALLEL_PITCH
        for (s, s_port), (d, d_port) in ((ends[0], ends[1]), (ends[1], ends[0])):
            lid = str(LinkDir(s, d, s_port if parallel else None))
            names = {str(LinkDir(s, d)), lid}
            if s_port is not None:
                names.add(str(LinkDir(s, d, s_port)))
            for n in names:
                if drawn:
                    aliases[n].append(lid)
                else:
                    aliases.setdefault(n, [])
            if not drawn:
                continue
            x1, y1, x2, y2 = _offset_line(centre[s], centre[d], centre[a], centre[b], shift)
            links.append({"id": lid, "src": s, "dst": d, "kind": c.kind,
                          "cable": f"{a}:{a_port}<->{b}" + (f":{b_port}" if b_port is not None else ""),
                          "x1": x1, "y1": y1, "x2": x2, "y2": y2})
    return Drawing(width, top + (Y_SERVER + 60.0 if with_hosts else Y_LEAF + 60.0), nodes, links,
                   {k: sorted(set(v)) for k, v in aliases.items()}, port_peer, with_hosts, node_of)


def _nic_port_intf(fab: Fabric, cable: Any) -> str:
    """The interface of the NIC port a host cable ends on (a dual-port NIC's second
    port is ``<host>-eth<r>p1``, its own link direction); ``""`` for a one-port NIC.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> fab = build_fabric(load_spec("topo/specs/dualport.yaml"))
    >>> sorted(_nic_port_intf(fab, c) for c in fab.links() if c.kind == "host" and c.b == "b0s0")
    ['b0s0-eth0', 'b0s0-eth0p1']
    """
    ports = getattr(fab.host(cable.b).nics[cable.b_port], "ports", ())
    index = int(getattr(cable, "nic_port", 0) or 0)
    return ports[index].intf if index < len(ports) else ""


def _offset_line(src: tuple[float, float], dst: tuple[float, float], a: tuple[float, float],
                 b: tuple[float, float], shift: float) -> tuple[float, float, float, float]:
    """The line src→dst moved to the right of its direction of travel, plus ``shift``
    along the cable's own normal (a→b, the same for both directions: parallel cables)."""
    dx, dy = dst[0] - src[0], dst[1] - src[1]
    length = math.hypot(dx, dy) or 1.0
    # right-hand normal of the direction of travel, in screen coordinates (y down)
    rx, ry = -dy / length * DIRECTION_OFFSET, dx / length * DIRECTION_OFFSET
    cx, cy = b[0] - a[0], b[1] - a[1]
    clen = math.hypot(cx, cy) or 1.0
    sx, sy = -cy / clen * shift, cx / clen * shift
    return (round(src[0] + rx + sx, 1), round(src[1] + ry + sy, 1),
            round(dst[0] + rx + sx, 1), round(dst[1] + ry + sy, 1))


__all__ = ["Drawing", "layout"]
