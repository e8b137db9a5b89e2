"""Language-independent target state: what tables, externs and the packet replication
engine hold, with BMv2 semantics and P4Runtime error codes.

The compiled program (:mod:`p4sim.engine`) reads these objects per packet; the STF runner
and the P4Runtime server write them. Everything is re-exported here.

Example::

    >>> from p4sim.runtime import Table, KeyField, ActionSpec, ActionCall, Exact
    >>> t = Table("t", [KeyField("k", "exact", 8)], [ActionSpec("a", [("x", 8)])])
    >>> _ = t.add_entry([Exact(1)], ActionCall("a", (7,)))
    >>> t.lookup((1,)).action_args
    (7,)
"""
from p4sim.runtime.action_profile import ActionProfile, ActionSelector, Group, Member
from p4sim.runtime.counters import CounterArray, CounterCell, DirectCounter
from p4sim.runtime.digest import DigestConfig, DigestList, DigestQueue
from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.hashes import (CustomCrc, compute_hash, crc16, crc32, csum16, get_algorithm,
                                  identity, pack_fields, xor16)
from p4sim.runtime.meters import GREEN, RED, YELLOW, DirectMeter, MeterArray, MeterCell, MeterConfig
from p4sim.runtime.pre import CloneSession, McNode, PacketReplicationEngine
from p4sim.runtime.registers import RegisterArray
from p4sim.runtime.tables import (ActionCall, ActionSpec, Exact, GroupRef, KeyField, LookupResult, Lpm,
                                  MemberRef, Optional_, Range, Table, TableEntryState, Ternary,
                                  validate_action_call)

__all__ = [
    "ActionProfile", "ActionSelector", "Group", "Member",
    "CounterArray", "CounterCell", "DirectCounter",
    "DigestConfig", "DigestList", "DigestQueue",
    "RuntimeStateError",
    "CustomCrc", "compute_hash", "crc16", "crc32", "csum16", "get_algorithm", "identity",
    "pack_fields", "xor16",
    "GREEN", "YELLOW", "RED", "DirectMeter", "MeterArray", "MeterCell", "MeterConfig",
    "CloneSession", "McNode", "PacketReplicationEngine",
    "RegisterArray",
    "ActionCall", "ActionSpec", "Exact", "GroupRef", "KeyField", "LookupResult", "Lpm", "MemberRef",
    "Optional_", "Range", "Table", "TableEntryState", "Ternary", "validate_action_call",
]
