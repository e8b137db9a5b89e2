"""The packet replication engine: multicast groups and clone (mirroring) sessions.

Two ways to configure it, as on BMv2 ``simple_switch_grpc``:

* **BMv2 style** (Thrift / ``simple_switch_CLI``): groups (``mc_mgrp_create``) hold an
  ordered list of *nodes*; a node (``mc_node_create``) has a replication id ``rid`` and a
  set of ports. Node handles are the lowest free index. ``mirroring_add`` /
  ``mirroring_add_mc`` bind a clone session to a port or a multicast group.
* **P4Runtime style** (``MulticastGroupEntry`` / ``CloneSessionEntry``): replicas
  ``(egress_port, instance)``. As BMv2's P4Runtime server (PI) does, the replicas are
  grouped into one node per instance and a clone session becomes the hidden multicast
  group ``32768 + session_id`` (session ids 1..511).

``replicate(mgrp)`` returns ``[(port, rid), ...]`` in BMv2's order: nodes in the order
they were associated with the group, and within a node ports ascending. For P4Runtime
groups the node order is that of PI's ``std::unordered_map<rid, node>``, which this module
reproduces for libstdc++ (for fewer than 14 distinct instances whose values differ
modulo 13 it is the *reverse* of their first appearance in the replica list). On a
modify, PI keeps the nodes whose instance survives in place, appends nodes for new
instances, and removes the others.

Example::

    >>> pre = PacketReplicationEngine()
    >>> pre.insert_multicast_group(1, [(3, 1), (1, 1), (2, 2)])
    >>> pre.replicate(1)
    [(2, 2), (1, 1), (3, 1)]
    >>> pre.mc_mgrp_create(7); h = pre.mc_node_create(5, [4, 0]); pre.mc_node_associate(7, h)
    >>> pre.replicate(7)
    [(0, 5), (4, 5)]
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from math import floor
from typing import Iterable, Optional, Sequence

from p4sim.runtime.errors import RuntimeStateError

FIRST_RESERVED_GROUP_ID = 1 << 15     # PI: P4Runtime clone sessions use 32768 + session id
MIN_CLONE_SESSION_ID = 1              # PI's accepted P4Runtime clone session ids: [1, 512)
MAX_CLONE_SESSION_ID = 512
MAX_MIRROR_SESSIONS = 1 << 15         # BMv2-style mirroring ids: [0, 32768)

# libstdc++ unordered_map bucket counts as a map grows from empty one insert at a time.
_GCC_BUCKETS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229)


def _unordered_map_order(keys: Iterable[int]) -> list[int]:
    """Iteration order of a libstdc++ ``std::unordered_map<uint32_t, T>`` after inserting
    ``keys`` (distinct, in this order) into an empty map: identity hash, buckets from
    :data:`_GCC_BUCKETS`, a new key goes first in its bucket, or first overall when its
    bucket is empty; rehashing re-inserts in iteration order by the same rule."""
    order: list[int] = []
    nbuckets, step = 0, -1
    for key in keys:
        if len(order) + 1 > nbuckets:          # grow (first insert allocates 13 buckets)
            step += 1
            nbuckets = _GCC_BUCKETS[step]
            old, order = order, []
            for k in old:
                _bucket_insert(order, k, nbuckets)
        _bucket_insert(order, key, nbuckets)
    return order


def _bucket_insert(order: list[int], key: int, nbuckets: int) -> None:
    b = key % nbuckets
    for i, k in enumerate(order):
        if k % nbuckets == b:
            order.insert(i, key)
            return
    order.insert(0, key)


@dataclass(slots=True)
class McNode:
    """A BMv2 multicast node (L1 handle): a replication id and its ports (ascending)."""

    handle: int
    rid: int
    ports: tuple[int, ...]
    mgrp: Optional[int] = None


@dataclass(slots=True)
class _P4rtGroup:
    nodes: dict[int, int] = field(default_factory=dict)   # rid -> node handle
    replicas: tuple[tuple[int, int], ...] = ()
    owner: str = "client"                                   # "client" or "clone"


@dataclass(frozen=True, slots=True)
class CloneSession:
    """Where clones of a session go: a port (BMv2 ``mirroring_add``) and/or a multicast
    group (``mirroring_add_mc``, or the hidden group of a P4Runtime session), and the
    P4Runtime ``packet_length_bytes`` truncation (0 = none)."""

    session_id: int
    egress_port: Optional[int] = None
    mgid: Optional[int] = None
    packet_length_bytes: int = 0
    class_of_service: int = 0
    replicas: tuple[tuple[int, int], ...] = ()   # P4Runtime replicas as written


class PacketReplicationEngine:
    """Multicast groups and clone sessions of one switch (see module docstring)."""

    def __init__(self) -> None:
        self._mgrps: dict[int, list[int]] = {}        # mgid -> node handles, association order
        self._nodes: dict[int, McNode] = {}
        self._free: list[int] = []
        self._next = 0
        self._p4rt: dict[int, _P4rtGroup] = {}
        self._sessions: dict[int, CloneSession] = {}

    # ------------------------------------------------------------------ BMv2 style
    def mc_mgrp_create(self, mgrp: int) -> None:
        """Create an empty multicast group ``mgrp``."""
        if mgrp in self._mgrps:
            raise RuntimeStateError("ALREADY_EXISTS", f"multicast group {mgrp} already exists")
        if not 0 <= mgrp < 1 << 16:
            raise RuntimeStateError("OUT_OF_RANGE", f"multicast group id {mgrp} not in [0, 65536)")
        self._mgrps[mgrp] = []

    def mc_mgrp_destroy(self, mgrp: int) -> None:
        """Destroy a group; its nodes survive, dissociated."""
        handles = self._mgrp(mgrp)
        for h in handles:
            self._nodes[h].mgrp = None
        del self._mgrps[mgrp]

    def _mgrp(self, mgrp: int) -> list[int]:
        handles = self._mgrps.get(mgrp)
        if handles is None:
            raise RuntimeStateError("NOT_FOUND", f"no multicast group {mgrp}")
        return handles

    def _node(self, handle: int) -> McNode:
        node = self._nodes.get(handle)
        if node is None:
            raise RuntimeStateError("NOT_FOUND", f"no multicast node with handle {handle}")
        return node

    @staticmethod
    def _check_node_args(rid: int, ports: Iterable[int]) -> tuple[int, ...]:
        if not 0 <= rid < 1 << 16:
            raise RuntimeStateError("OUT_OF_RANGE", f"replication id {rid} not in [0, 65536)")
        ps = tuple(sorted(set(ports)))
        if ps and ps[0] < 0:
            raise RuntimeStateError("OUT_OF_RANGE", "negative port")
        return ps

    def mc_node_create(self, rid: int, ports: Iterable[int]) -> int:
        """Create a node; returns its handle (the lowest free one)."""
        ps = self._check_node_args(rid, ports)
        handle = heapq.heappop(self._free) if self._free else self._next
        if handle == self._next:
            self._next += 1
        self._nodes[handle] = McNode(handle, rid, ps)
        return handle

    def mc_node_update(self, handle: int, ports: Iterable[int]) -> None:
        """Replace a node's ports."""
        node = self._node(handle)
        node.ports = self._check_node_args(node.rid, ports)

    def mc_node_destroy(self, handle: int) -> None:
        """Delete a node (dissociating it first if needed, as BMv2 allows)."""
        node = self._node(handle)
        if node.mgrp is not None:
            self._mgrps[node.mgrp].remove(handle)
        del self._nodes[handle]
        heapq.heappush(self._free, handle)

    def mc_node_associate(self, mgrp: int, handle: int) -> None:
        """Append a node to a group (a node belongs to at most one group)."""
        node = self._node(handle)
        handles = self._mgrp(mgrp)
        if node.mgrp is not None:
            raise RuntimeStateError("FAILED_PRECONDITION", f"node {handle} is already associated")
        handles.append(handle)
        node.mgrp = mgrp

    def mc_node_dissociate(self, mgrp: int, handle: int) -> None:
        """Remove a node from its group."""
        node = self._node(handle)
        handles = self._mgrp(mgrp)
        if node.mgrp != mgrp:
            raise RuntimeStateError("FAILED_PRECONDITION", f"node {handle} is not associated with group {mgrp}")
        handles.remove(handle)
        node.mgrp = None

    def mc_groups(self) -> dict[int, list[McNode]]:
        """Every group with its nodes in association order."""
        return {g: [self._nodes[h] for h in hs] for g, hs in sorted(self._mgrps.items())}

    def replicate(self, mgrp: int) -> list[tuple[int, int]]:
        """``[(egress_port, rid), ...]`` for a packet sent to ``mgrp`` ([] if unknown)."""
        handles = self._mgrps.get(mgrp)
        if not handles:
            return []
        out: list[tuple[int, int]] = []
        nodes = self._nodes
        for h in handles:
            node = nodes[h]
            rid = node.rid
            out.extend((p, rid) for p in node.ports)
        return out

    # ------------------------------------------------------------------ P4Runtime groups
    @staticmethod
    def _group_replicas(replicas: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
        by_rid: dict[int, list[int]] = {}
        seen: set[tuple[int, int]] = set()
        for port, instance in replicas:
            if (port, instance) in seen:
                raise RuntimeStateError("INVALID_ARGUMENT", "duplicate replica in multicast group")
            seen.add((port, instance))
            PacketReplicationEngine._check_node_args(instance, [port])
            by_rid.setdefault(instance, []).append(port)
        return by_rid

    @staticmethod
    def _check_user_group_id(group_id: int) -> None:
        if group_id == 0:
            raise RuntimeStateError("INVALID_ARGUMENT", "multicast group id 0 is invalid")
        if not 0 < group_id < FIRST_RESERVED_GROUP_ID:
            raise RuntimeStateError("OUT_OF_RANGE",
                                    f"multicast group id {group_id} not in [1, {FIRST_RESERVED_GROUP_ID})")

    def _p4rt_create(self, group_id: int, replicas: Sequence[tuple[int, int]], owner: str) -> None:
        by_rid = self._group_replicas(replicas)
        if group_id in self._mgrps:
            raise RuntimeStateError("ALREADY_EXISTS", f"multicast group {group_id} already exists")
        self.mc_mgrp_create(group_id)
        group = _P4rtGroup(replicas=tuple(replicas), owner=owner)
        for rid in _unordered_map_order(by_rid):
            h = self.mc_node_create(rid, by_rid[rid])
            self.mc_node_associate(group_id, h)
            group.nodes[rid] = h
        self._p4rt[group_id] = group

    def _p4rt_modify(self, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        by_rid = self._group_replicas(replicas)
        old = self._p4rt[group_id]
        new_nodes: dict[int, int] = {}
        for rid in _unordered_map_order(by_rid):
            h = old.nodes.get(rid)
            if h is None:
                h = self.mc_node_create(rid, by_rid[rid])
                self.mc_node_associate(group_id, h)
            else:
                self.mc_node_update(h, by_rid[rid])
            new_nodes[rid] = h
        for rid, h in old.nodes.items():
            if rid not in new_nodes:
                self.mc_node_destroy(h)
        old.nodes = new_nodes
        old.replicas = tuple(replicas)

    def _p4rt_delete(self, group_id: int) -> None:
        group = self._p4rt.pop(group_id)
        for h in group.nodes.values():
            self.mc_node_destroy(h)
        del self._mgrps[group_id]

    def _user_group(self, group_id: int) -> _P4rtGroup:
        group = self._p4rt.get(group_id)
        if group is None or group.owner != "client":
            raise RuntimeStateError("NOT_FOUND", f"no multicast group {group_id}")
        return group

    def insert_multicast_group(self, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        """P4Runtime INSERT of a ``MulticastGroupEntry``; replicas are ``(port, instance)``."""
        self._check_user_group_id(group_id)
        self._p4rt_create(group_id, replicas, "client")

    def modify_multicast_group(self, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        """P4Runtime MODIFY."""
        self._check_user_group_id(group_id)
        self._user_group(group_id)
        self._p4rt_modify(group_id, replicas)

    def delete_multicast_group(self, group_id: int) -> None:
        """P4Runtime DELETE."""
        self._check_user_group_id(group_id)
        self._user_group(group_id)
        self._p4rt_delete(group_id)

    def set_multicast_group(self, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        """Insert or modify (convenience for STF tests and scripts)."""
        self._check_user_group_id(group_id)
        if group_id in self._p4rt:
            self.modify_multicast_group(group_id, replicas)
        else:
            self.insert_multicast_group(group_id, replicas)

    def get_multicast_group(self, group_id: int) -> list[tuple[int, int]]:
        """Replicas ``(port, instance)`` as a P4Runtime read returns them."""
        self._user_group(group_id)
        return [(p, rid) for p, rid in self.replicate(group_id)]

    def multicast_group_ids(self) -> list[int]:
        """Ids of the P4Runtime multicast groups (clone sessions' groups excluded)."""
        return sorted(g for g, grp in self._p4rt.items() if grp.owner == "client")

    # ------------------------------------------------------------------ clone sessions
    @staticmethod
    def _check_p4rt_session(session_id: int) -> None:
        if not MIN_CLONE_SESSION_ID <= session_id < MAX_CLONE_SESSION_ID:
            raise RuntimeStateError("OUT_OF_RANGE", f"clone session id {session_id} not in "
                                    f"[{MIN_CLONE_SESSION_ID}, {MAX_CLONE_SESSION_ID})")

    @staticmethod
    def _check_session_args(class_of_service: int, packet_length_bytes: int) -> None:
        if class_of_service != 0:
            raise RuntimeStateError("UNIMPLEMENTED", "class of service for clone sessions is not supported")
        if not 0 <= packet_length_bytes < 1 << 16:
            raise RuntimeStateError("OUT_OF_RANGE", f"packet_length_bytes {packet_length_bytes} not in [0, 65536)")

    def insert_clone_session(self, session_id: int, replicas: Sequence[tuple[int, int]],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        """P4Runtime INSERT of a ``CloneSessionEntry``."""
        self._check_p4rt_session(session_id)
        self._check_session_args(class_of_service, packet_length_bytes)
        if session_id in self._sessions:
            raise RuntimeStateError("ALREADY_EXISTS", f"clone session {session_id} already exists")
        mgid = FIRST_RESERVED_GROUP_ID + session_id
        self._p4rt_create(mgid, replicas, "clone")
        self._sessions[session_id] = CloneSession(session_id, None, mgid, packet_length_bytes,
                                                  class_of_service, tuple(replicas))

    def modify_clone_session(self, session_id: int, replicas: Sequence[tuple[int, int]],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        """P4Runtime MODIFY."""
        self._check_p4rt_session(session_id)
        self._check_session_args(class_of_service, packet_length_bytes)
        old = self._sessions.get(session_id)
        if not self._is_p4rt_session(session_id) or old is None or old.mgid is None:
            raise RuntimeStateError("NOT_FOUND", f"no clone session {session_id}")
        self._p4rt_modify(old.mgid, replicas)
        self._sessions[session_id] = CloneSession(session_id, None, old.mgid, packet_length_bytes,
                                                  class_of_service, tuple(replicas))

    def delete_clone_session(self, session_id: int) -> None:
        """P4Runtime DELETE."""
        self._check_p4rt_session(session_id)
        if not self._is_p4rt_session(session_id):
            raise RuntimeStateError("NOT_FOUND", f"no clone session {session_id}")
        self._p4rt_delete(FIRST_RESERVED_GROUP_ID + session_id)
        del self._sessions[session_id]

    def set_clone_session(self, session_id: int, replicas: Sequence[tuple[int, int]],
                          class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        """Insert or modify a P4Runtime clone session."""
        if self._is_p4rt_session(session_id):
            self.modify_clone_session(session_id, replicas, class_of_service, packet_length_bytes)
        else:
            self.insert_clone_session(session_id, replicas, class_of_service, packet_length_bytes)

    def _is_p4rt_session(self, session_id: int) -> bool:
        s = self._sessions.get(session_id)
        grp = self._p4rt.get(FIRST_RESERVED_GROUP_ID + session_id)
        return s is not None and s.mgid == FIRST_RESERVED_GROUP_ID + session_id and grp is not None \
            and grp.owner == "clone"

    def _check_mirror_id(self, session_id: int) -> None:
        if not 0 <= session_id < MAX_MIRROR_SESSIONS:
            raise RuntimeStateError("OUT_OF_RANGE", f"mirroring session {session_id} not in [0, {MAX_MIRROR_SESSIONS})")
        if self._is_p4rt_session(session_id):
            raise RuntimeStateError("ALREADY_EXISTS", f"session {session_id} is a P4Runtime clone session")

    def mirroring_add(self, session_id: int, egress_port: int) -> None:
        """BMv2 ``mirroring_add``: clones of this session go to ``egress_port``."""
        self._check_mirror_id(session_id)
        if egress_port < 0:
            raise RuntimeStateError("OUT_OF_RANGE", "negative port")
        self._sessions[session_id] = CloneSession(session_id, egress_port=egress_port)

    def mirroring_add_mc(self, session_id: int, mgrp: int) -> None:
        """BMv2 ``mirroring_add_mc``: clones of this session are multicast to ``mgrp``."""
        self._check_mirror_id(session_id)
        if not 0 <= mgrp < 1 << 16:
            raise RuntimeStateError("OUT_OF_RANGE", f"multicast group id {mgrp} not in [0, 65536)")
        self._sessions[session_id] = CloneSession(session_id, mgid=mgrp)

    def mirroring_delete(self, session_id: int) -> None:
        """BMv2 ``mirroring_delete`` (P4Runtime sessions: use :meth:`delete_clone_session`)."""
        if session_id not in self._sessions or self._is_p4rt_session(session_id):
            raise RuntimeStateError("NOT_FOUND", f"no mirroring session {session_id}")
        del self._sessions[session_id]

    def get_clone_session(self, session_id: int) -> Optional[CloneSession]:
        """The session's configuration, or None (BMv2 then drops the clone)."""
        return self._sessions.get(session_id)

    def clone_session_ids(self) -> list[int]:
        """Ids of the P4Runtime clone sessions."""
        return sorted(s for s in self._sessions if self._is_p4rt_session(s))

    def clone_replicas(self, session_id: int) -> list[tuple[int, int]]:
        """``[(egress_port, rid), ...]`` for one clone: the multicast copies first, then
        the single port copy (rid 0); [] for an unknown session."""
        s = self._sessions.get(session_id)
        if s is None:
            return []
        out = self.replicate(s.mgid) if s.mgid is not None else []
        if s.egress_port is not None:
            out.append((s.egress_port, 0))
        return out

    def reset(self) -> None:
        """Forget every group, node and session."""
        self.__init__()  # type: ignore[misc]
