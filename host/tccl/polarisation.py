"""Polarised hash models in TCCL's source-port solver: the same CRC on both tiers.

With the same CRC at the leaf and the spine a seed only XORs a constant into H, so the
spine member a flow takes is a fixed function of its leaf member, whatever its source
port; the constant comes from the seeds of each (source leaf, spine) pair, so the
function differs from leaf to leaf. :func:`follow_polarisation` probes it once per
(source leaf, uplink group, spine, downlinks) on one flow; where it is a bijection f on
the spine's links (:func:`polarised_downlinks`), colour ``(spine, k)`` means *downlink k*,
reached from each flow's own leaf by uplink ``f⁻¹(k)``, so both tiers stay properly
coloured. :class:`host.tccl.ports.PortPlanner` then checks every flow (greedy fallback
when a colour is unreachable).

Example::

    >>> polarised_downlinks({0: {1}, 1: {0}}, [0, 1])
    [1, 0]
"""
from __future__ import annotations

from typing import Collection, Mapping, Optional, Sequence

from host.tccl.hops import FlowHop
from host.tccl.portplan import PROTO_UDP, Colour, FlowRequest
from p4src.hashmodel import FabricHashModel, port_to_member_table


def polarised_downlinks(reach: Mapping[int, Collection[int]],
                        leaf_members: Sequence[int]) -> Optional[list[int]]:
    """The polarisation remap rule of :class:`host.tccl.ports.PortPlanner` for the colours through one spine.

    ``reach[a]``: the spine members (indices in the spine's group towards the destination
    leaf) that some source port reaches together with leaf member ``a`` (indices in the
    leaf's group); ``leaf_members``: the leaf member of each colour ``(spine, j)``, j in
    order. When every one of them reaches exactly one spine member, and no two the same
    one (the function is a bijection on the spine's links), returns the spine member the
    leaf's j-th link fixes (the planner then routes colour ``(spine, k)`` over the link j
    whose member is k, per source leaf); ``None`` otherwise (not polarised there: colour
    j keeps uplink j and downlink j).

        >>> polarised_downlinks({0: {1}, 1: {0}}, [0, 1])
        [1, 0]
        >>> polarised_downlinks({0: {0, 1}, 1: {0, 1}}, [0, 1]) is None
        True
    """
    image = [reach.get(a, set()) for a in leaf_members]
    if all(len(x) == 1 for x in image) and len({min(x) for x in image}) == len(leaf_members):
        return [min(x) for x in image]
    return None


def follow_polarisation(model: FabricHashModel, flows: Sequence[FlowRequest], hops: Sequence[FlowHop]) -> None:
    """Remap the colours of ``hops`` in place where the model is polarised.

    The spine member is probed as a function of the leaf member once per (source leaf,
    uplink group, spine, downlinks), on the first flow with that key; where it is a
    bijection f on the spine's links, colour ``(spine, k)`` is routed over uplink
    ``f⁻¹(k)`` and downlink k. A colour then names the same downlink from every leaf (the
    destination tier stays properly coloured) and distinct colours distinct uplinks at
    each leaf (so does the source tier). Spines with one colour per downlink only: where
    colours share downlinks round-robin, or the function is no bijection, nothing changes.

        >>> from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel
        >>> from host.tccl.hops import hop_of
        >>> m = FabricHashModel({"l0": SwitchHashModel("l0", groups={1: GroupModel(0, ["s0", "s1"])})})
        >>> req = FlowRequest("f0", "10.0.0.1", "10.1.0.1", "l0", 1, "l1")
        >>> hop = hop_of(m, req); follow_polarisation(m, [req], [hop]); hop.leaf_member
        {('s0', 0): 0, ('s1', 0): 1}
    """
    probed: dict[tuple[str, int, str, int], Optional[list[int]]] = {}
    leaf_tables: dict[str, list[int]] = {}          # flow name -> its leaf table
    for req, hop in zip(flows, hops):
        for spine in dict.fromkeys(c[0] for c in hop.colours):
            cols = [c for c in hop.colours if c[0] == spine]        # (spine, j), j in order
            sh = hop.spine_hop[cols[0]]
            if sh is None:
                continue
            n_down = model.switch(spine).group(sh[1]).size
            if len(cols) != n_down:
                continue        # not one colour per downlink: colours share them round-robin
            key = (hop.leaf, hop.group, spine, n_down)
            if key not in probed:
                if req.name not in leaf_tables:
                    leaf_tables[req.name] = leaf_table(model, req, hop)
                probed[key] = probe_spine(model, req, hop, sh[1], cols, leaf_tables[req.name])
            down = probed[key]
            if down is None:
                continue
            uplink = [hop.leaf_member[c] for c in cols]
            for j, k in enumerate(down):
                hop.leaf_member[(spine, k)] = uplink[j]
                hop.spine_hop[(spine, k)] = (spine, sh[1], k)


def leaf_table(model: FabricHashModel, req: FlowRequest, hop: FlowHop) -> list[int]:
    """Leaf member index (in the group) of every source port of ``req``."""
    leaf = model.switch(hop.leaf)
    base = leaf.group(hop.group).base
    return [m - base for m in port_to_member_table(leaf, hop.group, req.src, req.dst, PROTO_UDP, req.dport)]


def probe_spine(model: FabricHashModel, req: FlowRequest, hop: FlowHop, group_id: int, cols: Sequence[Colour],
                leaf_members: Sequence[int]) -> Optional[list[int]]:
    """:func:`polarised_downlinks` of the colours ``cols`` through one spine, probed on
    ``req``'s 65,536 ports (``leaf_members``: its :func:`leaf_table`)."""
    sw = model.switch(cols[0][0])
    sbase = sw.group(group_id).base
    st = port_to_member_table(sw, group_id, req.src, req.dst, PROTO_UDP, req.dport)
    reach: dict[int, set[int]] = {}
    for a, b in zip(leaf_members, st):
        reach.setdefault(a, set()).add(b - sbase)
    return polarised_downlinks(reach, [hop.leaf_member[c] for c in cols])


__all__ = ["follow_polarisation", "leaf_table", "polarised_downlinks", "probe_spine"]
