"""Where flows go: the published hash model evaluated hop by hop for many flows at once.

:func:`route_flows` gives every flow (source NIC, destination NIC, UDP source port) its
directed links: NVLink for two GPUs of one server, NIC → leaf → NIC under one leaf, else
NIC → leaf → (ECMP over the leaf's group for the destination: its uplink group, or the
detour group its routes send the destination leaf to, ``SimFabric.leaf_group``) spine →
(the spine's group towards the destination leaf, or its single link) leaf → NIC.

The ECMP choice is ``p4src.hashmodel``'s, vectorised: the 17-byte message of the default
field list (seed, source and destination address, protocol, source and destination port,
MSB first; the ports are 0 for a flow that is not UDP, as the model and BMv2 hash them,
never left out) is built for all flows as a ``(flows, 17)`` byte array and CRC-16/ARC or
CRC-32 runs column by column with numpy table look-ups; ``member = H % size``. This is the
fast path the brief allows (``member_index`` is ~10 µs per flow and hop in Python, minutes
for a 64K-GPU step); switches with another field list fall back to
:func:`p4src.hashmodel.predict_member` flow by flow. ``tests/sim/test_routing.py`` checks
both against ``predict_path`` and GOR's ``PathEngine.current_path``.

Example::

    >>> from topo.model import build_fabric
    >>> from sim.topology import SimFabric
    >>> sf = SimFabric.build(build_fabric())
    >>> r = route_flows(sf, np.array([0]), np.array([2 * 2]), np.array([49152]))   # b0s0:0 -> b1s0:0
    >>> [sf.tier_name(l) for l in r.links[0] if l >= 0]
    ['nic_up', 'leaf_up', 'spine_down', 'leaf_down']
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from p4src.hashmodel import DEFAULT_FIELDS, predict_member
from sim.topology import SimFabric

ROCE_DPORT = 4791
PROTO_UDP = 17
MAX_HOPS = 4


def _table(poly: int, bits: int) -> np.ndarray:
    out = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        out[i] = c
    return out


_T16 = _table(0xA001, 16)
_T32 = _table(0xEDB88320, 32)


def crc_rows(msg: np.ndarray, use_crc32: np.ndarray) -> np.ndarray:
    """CRC of every row of a ``(n, bytes)`` uint8 array: CRC-32 where ``use_crc32`` else
    CRC-16/ARC (BMv2's ``crc16``), as ``uint32``.

        >>> m = np.frombuffer(b"123456789", np.uint8)[None, :]
        >>> [hex(int(x)) for x in (crc_rows(m, np.array([False]))[0], crc_rows(m, np.array([True]))[0])]
        ['0xbb3d', '0xcbf43926']
    """
    n = msg.shape[0]
    c16 = np.zeros(n, np.uint32)
    c32 = np.full(n, 0xFFFFFFFF, np.uint32)
    for j in range(msg.shape[1]):
        b = msg[:, j].astype(np.uint32)
        c16 = _T16[(c16 ^ b) & 0xFF] ^ (c16 >> 8)
        c32 = _T32[(c32 ^ b) & 0xFF] ^ (c32 >> 8)
    return np.where(use_crc32, c32 ^ np.uint32(0xFFFFFFFF), c16)


def messages(seed: np.ndarray, src: np.ndarray, dst: np.ndarray, sport: np.ndarray,
             dport: np.ndarray, proto: "np.ndarray | int" = PROTO_UDP) -> np.ndarray:
    """The ``(n, 17)`` hash input for the default field list; ``proto`` (one protocol or
    one per flow, default UDP): a flow that is not UDP has its port bytes 0 (the switch
    hashes the fields of the UDP header it never extracted as 0).

        >>> m = messages(np.array([1]), np.array([2]), np.array([3]), np.array([80]), np.array([443]), 6)
        >>> m[0, 12:].tolist()
        [6, 0, 0, 0, 0]
    """
    n = len(src)
    out = np.zeros((n, 17), np.uint8)
    for k, (arr, width) in enumerate(((seed, 4), (src, 4), (dst, 4))):
        a = np.asarray(arr, np.uint64)
        for b in range(width):
            out[:, 4 * k + b] = (a >> np.uint64(8 * (width - 1 - b))) & np.uint64(0xFF)
    pr = np.broadcast_to(np.asarray(proto, np.uint64), (n,))
    out[:, 12] = pr & np.uint64(0xFF)
    udp = pr == PROTO_UDP
    sp = np.where(udp, np.asarray(sport, np.uint64), np.uint64(0))
    dp = np.where(udp, np.asarray(dport, np.uint64), np.uint64(0))
    out[:, 13], out[:, 14] = sp >> np.uint64(8), sp & np.uint64(0xFF)
    out[:, 15], out[:, 16] = dp >> np.uint64(8), dp & np.uint64(0xFF)
    return out


#: Column order of :func:`messages` that gives the ports-first field list
#: (``p4src.hashmodel.PORTS_FIRST_FIELDS``: seed, UDP ports, protocol, addresses), the hash
#: input of a three-tier fabric's core groups and spine groups towards the leaves.
PORTS_FIRST_COLUMNS = np.array([0, 1, 2, 3, 13, 14, 15, 16, 12, 4, 5, 6, 7, 8, 9, 10, 11])


@dataclass(slots=True)
class Routes:
    """Routed flows: ``links`` is ``(flows, 4)`` link ids padded with ``-1``; ``spine``
    the spine crossed (``-1`` none); ``blackholed`` flows hashed onto a spine without a
    live link to the destination leaf (with the leaves' detours: only when no live uplink
    of the source leaf leads to a spine that reaches it); ``unreachable`` flows with no live path at all."""

    links: np.ndarray
    spine: np.ndarray
    blackholed: np.ndarray
    unreachable: np.ndarray

    @property
    def failed(self) -> np.ndarray:
        """Flows that cannot be delivered (blackholed or unreachable)."""
        return self.blackholed | self.unreachable


def _default_fields(sf: SimFabric) -> bool:
    return all(m.fields == DEFAULT_FIELDS for m in sf.hash_model.switches.values())


def ecmp_members(sf: SimFabric, switch_names: np.ndarray, seeds: np.ndarray, crc32: np.ndarray,
                 sizes: np.ndarray, src: np.ndarray, dst: np.ndarray, sport: np.ndarray,
                 dport: np.ndarray, group_ids: np.ndarray,
                 proto: "np.ndarray | int" = PROTO_UDP) -> np.ndarray:
    """Member index (``H % size``) of each flow in its switch's group (``sizes`` > 0);
    ``proto`` as in :func:`messages` (the simulator's own flows are all UDP)."""
    if _default_fields(sf):
        h = crc_rows(messages(seeds, src, dst, sport, dport, proto), crc32)
        return (h % np.maximum(sizes, 1).astype(np.uint32)).astype(np.int64)
    protos = np.broadcast_to(np.asarray(proto, np.int64), (len(src),))
    out = np.zeros(len(src), np.int64)
    for i in range(len(src)):    # another field list: the reference model, flow by flow
        m = sf.hash_model.switch(str(switch_names[i]))
        g = m.group(int(group_ids[i]))
        name = predict_member(m, int(group_ids[i]), int(src[i]), int(dst[i]), int(protos[i]),
                              int(sport[i]), int(dport[i]))
        out[i] = g.members.index(name)
    return out


def route_flows(sf: SimFabric, src_nic: np.ndarray, dst_nic: np.ndarray, sport: np.ndarray,
                dport: int = ROCE_DPORT) -> Routes:
    """Route UDP flows between NIC ids through the hash model (module docstring)."""
    src_nic = np.asarray(src_nic, np.int64)
    dst_nic = np.asarray(dst_nic, np.int64)
    sport = np.asarray(sport, np.int64)
    n = len(src_nic)
    links = np.full((n, MAX_HOPS), -1, np.int64)
    spine = np.full(n, -1, np.int64)
    black = np.zeros(n, bool)
    unreach = np.zeros(n, bool)
    same_host = (src_nic // sf.rails) == (dst_nic // sf.rails)
    links[same_host, 0] = sf.nic_nvlink[src_nic[same_host]]
    sl, dl = sf.nic_leaf[src_nic], sf.nic_leaf[dst_nic]
    same_leaf = ~same_host & (sl == dl)
    links[same_leaf, 0] = sf.nic_up[src_nic[same_leaf]]
    links[same_leaf, 1] = sf.nic_down[dst_nic[same_leaf]]
    cross = np.flatnonzero(~same_host & ~same_leaf)
    if len(cross):
        s, d = src_nic[cross], dst_nic[cross]
        lf, dlf = sl[cross], dl[cross]
        row = sf.leaf_group(lf, dlf)        # the leaf's group for this destination (detours)
        nup = sf.group_up_n[row]
        # a destination leaf no spine reaches (or a source leaf without uplinks): unreachable
        reach = sf.spine_down_n[:, dlf].sum(axis=0) > 0
        ok = (nup > 0) & reach
        unreach[cross[~ok]] = True
        idx = cross[ok]
        s, d, lf, dlf, row = s[ok], d[ok], lf[ok], dlf[ok], row[ok]
        sp = sport[idx]
        dp = np.full(len(idx), dport, np.int64)
        names = np.array(sf.leaf_names, dtype=object)[lf] if not _default_fields(sf) else lf
        m = ecmp_members(sf, names, sf.leaf_seed[lf], sf.leaf_crc32[lf], sf.group_up_n[row],
                         sf.nic_ip[s], sf.nic_ip[d], sp, dp, sf.group_id[row])
        up = sf.group_up[row, m]
        spn = sf.link_spine[up]
        nd = sf.spine_down_n[spn, dlf]
        black[idx[nd == 0]] = True
        j = np.zeros(len(idx), np.int64)
        multi = np.flatnonzero(nd > 1)
        if len(multi):
            gids = _spine_group_ids(sf, spn[multi], dlf[multi])
            snames = np.array(sf.spine_names, dtype=object)[spn[multi]] if not _default_fields(sf) else spn[multi]
            j[multi] = ecmp_members(sf, snames, sf.spine_seed[spn[multi]], sf.spine_crc32[spn[multi]],
                                    nd[multi], sf.nic_ip[s[multi]], sf.nic_ip[d[multi]], sp[multi],
                                    dp[multi], gids)
        down = sf.spine_down[spn, dlf, np.minimum(j, sf.spine_down.shape[2] - 1)]
        good = nd > 0
        g = idx[good]
        links[g, 0] = sf.nic_up[s[good]]
        links[g, 1] = up[good]
        links[g, 2] = down[good]
        links[g, 3] = sf.nic_down[d[good]]
        spine[g] = spn[good]
    return Routes(links, spine, black, unreach)


def _spine_group_ids(sf: SimFabric, spn: np.ndarray, dlf: np.ndarray) -> np.ndarray:
    """The spine's group id towards each destination leaf (only for the fallback path)."""
    out = np.zeros(len(spn), np.int64)
    cache: dict[tuple[int, int], int] = {}
    for i, (a, b) in enumerate(zip(spn.tolist(), dlf.tolist())):
        if (a, b) not in cache:
            m = sf.hash_model.switch(sf.spine_names[a])
            leaf = sf.leaf_names[b]
            cache[(a, b)] = next(gid for gid, g in sorted(m.groups.items())
                                 if all(x.partition("#")[0] == leaf for x in g.members))
        out[i] = cache[(a, b)]
    return out


def ideal_links(sf: SimFabric, src_nic: np.ndarray, dst_nic: np.ndarray) -> Routes:
    """Links of the ideal bound: cross-leaf flows use their source leaf's pooled uplinks
    and their destination leaf's pooled spine links (perfect, fluid balancing)."""
    src_nic = np.asarray(src_nic, np.int64)
    dst_nic = np.asarray(dst_nic, np.int64)
    r = route_flows(sf, src_nic, dst_nic, np.full(len(src_nic), 49152))
    cross = np.flatnonzero((r.links[:, 2] >= 0) | r.blackholed)
    sl, dl = sf.nic_leaf[src_nic[cross]], sf.nic_leaf[dst_nic[cross]]
    r.links[cross, 0] = sf.nic_up[src_nic[cross]]
    r.links[cross, 1] = sf.leaf_bundle_up[sl]
    r.links[cross, 2] = sf.leaf_bundle_down[dl]
    r.links[cross, 3] = sf.nic_down[dst_nic[cross]]
    r.blackholed[:] = False
    return r


__all__ = ["MAX_HOPS", "PROTO_UDP", "ROCE_DPORT", "Routes", "crc_rows", "ecmp_members",
           "ideal_links", "messages", "route_flows"]
