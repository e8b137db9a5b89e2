"""Tests for p4sim.runtime.pre: BMv2 multicast nodes, P4Runtime groups, clone sessions."""
from __future__ import annotations

import pytest

from p4sim.runtime import PacketReplicationEngine, RuntimeStateError
from p4sim.runtime.pre import FIRST_RESERVED_GROUP_ID, _unordered_map_order


def code_of(fn, *args, **kw) -> str:
    with pytest.raises(RuntimeStateError) as info:
        fn(*args, **kw)
    return info.value.code


def test_bmv2_nodes_order_and_handles() -> None:
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    a = pre.mc_node_create(10, [3, 1])
    b = pre.mc_node_create(20, [2])
    assert (a, b) == (0, 1)
    pre.mc_node_associate(1, b)
    pre.mc_node_associate(1, a)
    assert pre.replicate(1) == [(2, 20), (1, 10), (3, 10)]
    pre.mc_node_update(a, [5])
    assert pre.replicate(1) == [(2, 20), (5, 10)]
    pre.mc_node_dissociate(1, b)
    assert pre.replicate(1) == [(5, 10)]
    pre.mc_node_destroy(a)                       # destroy while associated is allowed
    assert pre.replicate(1) == []
    assert pre.mc_node_create(1, [1]) == 0       # lowest free handle reused
    assert pre.replicate(99) == []


def test_bmv2_errors() -> None:
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    pre.mc_mgrp_create(2)
    h = pre.mc_node_create(1, [1])
    pre.mc_node_associate(1, h)
    assert code_of(pre.mc_mgrp_create, 1) == "ALREADY_EXISTS"
    assert code_of(pre.mc_node_associate, 2, h) == "FAILED_PRECONDITION"
    assert code_of(pre.mc_node_dissociate, 2, h) == "FAILED_PRECONDITION"
    assert code_of(pre.mc_node_associate, 3, h) == "NOT_FOUND"
    assert code_of(pre.mc_node_associate, 1, 9) == "NOT_FOUND"
    assert code_of(pre.mc_node_create, 1 << 16, [1]) == "OUT_OF_RANGE"
    assert pre.replicate(1) == [(1, 1)]
    pre.mc_mgrp_destroy(1)
    assert pre.replicate(1) == []
    pre.mc_node_associate(2, h)                  # node was dissociated by the destroy
    assert pre.replicate(2) == [(1, 1)]


def test_unordered_map_order_model() -> None:
    assert _unordered_map_order([1]) == [1]
    assert _unordered_map_order([1, 2, 3]) == [3, 2, 1]
    assert _unordered_map_order([1, 14]) == [14, 1]          # same bucket mod 13: new first
    assert _unordered_map_order([2, 1, 15]) == [1, 15, 2]      # 15 joins 2's bucket, before it
    many = list(range(20))                                    # rehash to 29 buckets at 14
    assert sorted(_unordered_map_order(many)) == many


def test_p4runtime_group_order_and_read() -> None:
    pre = PacketReplicationEngine()
    pre.insert_multicast_group(1, [(1, 0), (2, 0), (3, 0)])
    assert pre.replicate(1) == [(1, 0), (2, 0), (3, 0)]
    pre.insert_multicast_group(2, [(4, 1), (3, 2), (1, 1), (2, 3)])
    assert pre.replicate(2) == [(2, 3), (3, 2), (1, 1), (4, 1)]
    assert pre.get_multicast_group(2) == [(2, 3), (3, 2), (1, 1), (4, 1)]
    assert pre.multicast_group_ids() == [1, 2]


def test_p4runtime_group_modify_keeps_surviving_nodes_in_place() -> None:
    pre = PacketReplicationEngine()
    pre.insert_multicast_group(5, [(1, 1), (2, 2), (3, 3)])   # nodes: rid 3, 2, 1
    assert pre.replicate(5) == [(3, 3), (2, 2), (1, 1)]
    pre.modify_multicast_group(5, [(7, 1), (4, 4), (2, 2)])   # keep 1 (ports 7), 2; add 4; drop 3
    assert pre.replicate(5) == [(2, 2), (7, 1), (4, 4)]
    pre.set_multicast_group(5, [(9, 9)])
    assert pre.replicate(5) == [(9, 9)]
    pre.delete_multicast_group(5)
    assert pre.replicate(5) == []
    assert pre.mc_groups() == {}


def test_p4runtime_group_errors_leave_state() -> None:
    pre = PacketReplicationEngine()
    pre.insert_multicast_group(1, [(1, 1)])
    before = pre.replicate(1)
    assert code_of(pre.insert_multicast_group, 1, [(2, 1)]) == "ALREADY_EXISTS"
    assert code_of(pre.insert_multicast_group, 2, [(2, 1), (2, 1)]) == "INVALID_ARGUMENT"
    assert code_of(pre.insert_multicast_group, 0, []) == "INVALID_ARGUMENT"
    assert code_of(pre.insert_multicast_group, FIRST_RESERVED_GROUP_ID, []) == "OUT_OF_RANGE"
    assert code_of(pre.modify_multicast_group, 3, [(1, 1)]) == "NOT_FOUND"
    assert code_of(pre.modify_multicast_group, 1, [(1, 1), (1, 1)]) == "INVALID_ARGUMENT"
    assert code_of(pre.modify_multicast_group, 1, [(1, 1 << 16)]) == "OUT_OF_RANGE"
    assert code_of(pre.delete_multicast_group, 3) == "NOT_FOUND"
    assert pre.replicate(1) == before
    assert pre.replicate(2) == []


def test_p4runtime_clone_sessions() -> None:
    pre = PacketReplicationEngine()
    pre.insert_clone_session(5, [(3, 1), (4, 1)], packet_length_bytes=64)
    s = pre.get_clone_session(5)
    assert s is not None and s.mgid == FIRST_RESERVED_GROUP_ID + 5 and s.egress_port is None
    assert s.packet_length_bytes == 64
    assert pre.clone_replicas(5) == [(3, 1), (4, 1)]
    assert pre.clone_session_ids() == [5]
    assert pre.multicast_group_ids() == []                    # hidden group
    assert code_of(pre.get_multicast_group, FIRST_RESERVED_GROUP_ID + 5) == "NOT_FOUND"
    assert code_of(pre.insert_clone_session, 5, [(1, 0)]) == "ALREADY_EXISTS"
    assert code_of(pre.insert_clone_session, 0, [(1, 0)]) == "OUT_OF_RANGE"
    assert code_of(pre.insert_clone_session, 512, [(1, 0)]) == "OUT_OF_RANGE"
    assert code_of(pre.insert_clone_session, 6, [(1, 0)], class_of_service=1) == "UNIMPLEMENTED"
    assert code_of(pre.modify_clone_session, 7, [(1, 0)]) == "NOT_FOUND"
    assert pre.get_clone_session(6) is None
    pre.set_clone_session(5, [(9, 0)])
    assert pre.clone_replicas(5) == [(9, 0)] and pre.get_clone_session(5).packet_length_bytes == 0
    pre.delete_clone_session(5)
    assert pre.get_clone_session(5) is None and pre.clone_replicas(5) == []
    assert pre.replicate(FIRST_RESERVED_GROUP_ID + 5) == []
    assert code_of(pre.delete_clone_session, 5) == "NOT_FOUND"


def test_bmv2_mirroring() -> None:
    pre = PacketReplicationEngine()
    pre.mirroring_add(0, 7)
    assert pre.clone_replicas(0) == [(7, 0)]
    pre.mc_mgrp_create(3)
    pre.mc_node_associate(3, pre.mc_node_create(2, [1, 2]))
    pre.mirroring_add_mc(4, 3)
    assert pre.get_clone_session(4).mgid == 3
    assert pre.clone_replicas(4) == [(1, 2), (2, 2)]
    pre.mirroring_add(4, 9)                                   # replaces the session
    assert pre.clone_replicas(4) == [(9, 0)]
    pre.insert_clone_session(8, [(1, 0)])
    assert code_of(pre.mirroring_add, 8, 1) == "ALREADY_EXISTS"
    assert code_of(pre.mirroring_delete, 8) == "NOT_FOUND"
    pre.mirroring_delete(4)
    assert pre.get_clone_session(4) is None
    assert code_of(pre.mirroring_add, 1 << 15, 1) == "OUT_OF_RANGE"
    pre.reset()
    assert pre.get_clone_session(0) is None
