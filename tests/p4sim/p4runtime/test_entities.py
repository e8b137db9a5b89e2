"""Tests of p4sim.p4runtime.entities: every P4Runtime entity kind written, read, undone
and seen in effect by packets through V1ModelSwitch, with the spec's error codes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2 as pb

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.entities import EntityStore
from p4sim.runtime.errors import RuntimeStateError
from p4sim.v1model.switch import V1ModelSwitch
from v1model_text import v1model_program

PROGRAM = v1model_program(r"""
struct learn_t { bit<48> src; bit<9> port; }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) pkts;
    meter(4, MeterType.packets) rate;
    register<bit<32>>(16) regs;
    direct_counter(CounterType.packets_and_bytes) fwd_hits;
    direct_meter<bit<2>>(MeterType.packets) fwd_rate;
    action_selector(HashAlgorithm.identity, 16, 16) ecmp;
    action_profile(8) prof;

    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action fwd_metered(bit<9> port) { sm.egress_spec = port; fwd_rate.read(meta.color); }
    action mcast(bit<16> grp) { sm.mcast_grp = grp; }
    action learn() { digest<learn_t>(1, { hdr.eth.src, sm.ingress_port }); }
    action only_default() { }
    action only_entry() { }

    table exact_t {
        key = { hdr.eth.dst: exact; }
        actions = { fwd_metered; drop; mcast; learn; }
        default_action = drop();
        counters = fwd_hits;
        meters = fwd_rate;
        size = 16;
    }
    table lpm_t {
        key = { hdr.eth.src: lpm; }
        actions = { fwd; @defaultonly only_default; @tableonly only_entry; }
        default_action = only_default();
    }
    table mixed_t {
        key = { hdr.eth.etype: ternary; hdr.eth.src: range; sm.ingress_port: optional; }
        actions = { fwd; drop; }
        support_timeout = true;
    }
    table sel_t {
        key = { hdr.eth.etype: exact; hdr.eth.src: selector; }
        actions = { fwd; drop; }
        implementation = ecmp;
    }
    table prof_t {
        key = { hdr.eth.etype: exact; }
        actions = { fwd; drop; }
        implementation = prof;
    }
    table const_t {
        key = { hdr.eth.etype: exact; }
        actions = { fwd; drop; }
        const entries = { 0x0101 : fwd(7); }
        const default_action = drop();
    }
    apply {
        if (hdr.eth.etype == 0x0001) {
            exact_t.apply();
        } else if (hdr.eth.etype == 0x0002) {
            lpm_t.apply();
        } else if (hdr.eth.etype == 0x0003) {
            pkts.count((bit<32>)sm.ingress_port);
            rate.execute_meter((bit<32>)sm.ingress_port, meta.color);
            regs.read(meta.val, (bit<32>)sm.ingress_port);
            sm.egress_spec = (bit<9>)meta.val;
            regs.write((bit<32>)sm.ingress_port, meta.val + 1);
        } else if (hdr.eth.etype == 0x0101) {
            const_t.apply();
        } else if (hdr.eth.etype >= 0x0800 && hdr.eth.etype < 0x0900) {
            mixed_t.apply();
        } else if (hdr.eth.etype >= 0x0900 && hdr.eth.etype < 0x0a00) {
            sel_t.apply();
        } else {
            prof_t.apply();
        }
    }
}
""", meta="bit<32> val; bit<2> color;")

INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
DST = 0x0000000000AA
SRC = 0x0000000000BB


@dataclass
class Env:
    """A fresh program with its P4Info, entity store and switch."""

    prog: Any
    info: Any
    store: EntityStore
    sw: V1ModelSwitch
    ids: dict[str, int]

    def write(self, utype: int, **entity: Any) -> Callable[[], None]:
        return self.store.write(pb.Update(type=utype, entity=pb.Entity(**entity)))

    def read(self, **entity: Any) -> list[pb.Entity]:
        return list(self.store.read(pb.Entity(**entity)))

    def send(self, port: int, etype: int, dst: int = DST, src: int = SRC) -> list[tuple[int, bytes]]:
        frame = dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + b"payload!"
        return self.sw.process_packet(port, frame)

    def ports(self, port: int, etype: int, **kw: Any) -> list[int]:
        return [p for p, _ in self.send(port, etype, **kw)]


@pytest.fixture
def env() -> Env:
    prog = load_program_text(PROGRAM, "entities_test.p4")
    info = build_p4info(prog)
    ids = {}
    for kind in ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
                 "direct_meters", "registers", "digests"):
        for obj in getattr(info, kind):
            ids[obj.preamble.alias] = obj.preamble.id
    return Env(prog, info, EntityStore(prog, info, extras=True), V1ModelSwitch(prog), ids)


def expect_code(code: str, fn: Callable[[], Any]) -> None:
    with pytest.raises(RuntimeStateError) as ei:
        fn()
    assert ei.value.code == code, str(ei.value)


# --------------------------------------------------------------------------- builders
def action(env: Env, name: str, *params: bytes) -> pb.Action:
    a = pb.Action(action_id=env.ids[name])
    for i, v in enumerate(params, 1):
        a.params.add(param_id=i, value=v)
    return a


def exact_entry(env: Env, dst: int = DST, act: pb.Action | None = None, **kw: Any) -> pb.TableEntry:
    te = pb.TableEntry(table_id=env.ids["exact_t"], **kw)
    te.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")      # full width, as tutorials send
    if act is not None:
        te.action.action.CopyFrom(act)
    return te


def fingerprint(env: Env) -> list[Any]:
    """Everything observable: wildcard reads of every kind plus runtime handles."""
    out: list[Any] = []
    reads = [
        dict(table_entry=pb.TableEntry(counter_data=pb.CounterData(), meter_config=pb.MeterConfig())),
        dict(action_profile_member=pb.ActionProfileMember()),
        dict(action_profile_group=pb.ActionProfileGroup()),
        dict(counter_entry=pb.CounterEntry()),
        dict(meter_entry=pb.MeterEntry()),
        dict(register_entry=pb.RegisterEntry()),
        dict(packet_replication_engine_entry=pb.PacketReplicationEngineEntry()),
        dict(digest_entry=pb.DigestEntry()),
    ]
    for r in reads:
        out.append([e.SerializeToString() for e in env.read(**r)])
    for tid in (env.ids["exact_t"], env.ids["lpm_t"]):
        out.append([e.SerializeToString() for e in env.read(table_entry=pb.TableEntry(
            table_id=tid, is_default_action=True))])
    st = env.prog.state
    for name, t in sorted(st.tables.items()):
        out.append((name, [(e.handle, e.matches, e.priority, e.action, e.metadata, e.idle_timeout_ns,
                            e.counter.read() if e.counter else None,
                            id(e.meter), e.meter.config if e.meter else None) for e in t.entries()],
                    t.default_action))
    for name, p in sorted(st.action_profiles.items()):
        out.append((name, sorted((m.member_id, m.handle, m.action) for m in p.members.values()),
                    sorted((g.group_id, g.handle, tuple(g.member_ids), tuple(m.handle for m in g.by_handle))
                           for g in p.groups.values())))
    out.append([(g, st.pre.replicate(g)) for g in range(1, 4)])
    out.append(sorted(st.pre.clone_session_ids()))
    return out


# --------------------------------------------------------------------------- table entries
def test_exact_entry_insert_read_modify_delete_forwards(env: Env) -> None:
    env.write(INSERT, table_entry=exact_entry(env, act=action(env, "fwd_metered", b"\x00\x03"),
                                              metadata=b"cookie"))
    assert env.ports(1, 0x0001) == [3]
    [ent] = env.read(table_entry=pb.TableEntry(table_id=env.ids["exact_t"]))
    te = ent.table_entry
    assert te.match[0].exact.value == b"\xaa"                # canonical on read
    assert te.action.action.params[0].value == b"\x03"
    assert te.metadata == b"cookie" and not te.HasField("counter_data")
    assert len(env.read(table_entry=pb.TableEntry())) == 2   # + the const entry of const_t
    env.write(MODIFY, table_entry=exact_entry(env, act=action(env, "fwd_metered", b"\x04")))
    assert env.ports(1, 0x0001) == [4]
    env.write(DELETE, table_entry=exact_entry(env))
    assert env.ports(1, 0x0001) == []                        # default action drops
    assert env.read(table_entry=pb.TableEntry(table_id=env.ids["exact_t"])) == []


def test_read_filters_by_match_priority_and_action(env: Env) -> None:
    env.write(INSERT, table_entry=exact_entry(env, 1, action(env, "fwd_metered", b"\x01")))
    env.write(INSERT, table_entry=exact_entry(env, 2, action(env, "drop")))
    one = env.read(table_entry=exact_entry(env, 2))
    assert [e.table_entry.match[0].exact.value for e in one] == [b"\x02"]
    by_action = env.read(table_entry=pb.TableEntry(table_id=env.ids["exact_t"],
                                                   action=pb.TableAction(action=action(env, "drop"))))
    assert [e.table_entry.match[0].exact.value for e in by_action] == [b"\x02"]
    assert env.read(table_entry=exact_entry(env, 3)) == []


def mixed_entry(env: Env, priority: int, port: int, etype: tuple[int, int] | None = None,
                src: tuple[int, int] | None = None, in_port: int | None = None) -> pb.TableEntry:
    te = pb.TableEntry(table_id=env.ids["mixed_t"], priority=priority)
    if etype is not None:
        fm = te.match.add(field_id=1)
        fm.ternary.value, fm.ternary.mask = etype[0].to_bytes(2, "big"), etype[1].to_bytes(2, "big")
    if src is not None:
        fm = te.match.add(field_id=2)
        fm.range.low, fm.range.high = src[0].to_bytes(6, "big"), src[1].to_bytes(6, "big")
    if in_port is not None:
        te.match.add(field_id=3).optional.value = bytes([in_port])
    te.action.action.CopyFrom(action(env, "fwd", bytes([port])))
    return te


def test_ternary_range_optional_priorities(env: Env) -> None:
    env.write(INSERT, table_entry=mixed_entry(env, 10, 1, etype=(0x0800, 0xFF00)))
    env.write(INSERT, table_entry=mixed_entry(env, 20, 2, etype=(0x0806, 0xFFFF), src=(0xB0, 0xBF)))
    env.write(INSERT, table_entry=mixed_entry(env, 30, 3, in_port=5))
    assert env.ports(1, 0x0806) == [2]
    assert env.ports(1, 0x0806, src=0xC0) == [1]
    assert env.ports(5, 0x0806) == [3]
    ents = env.read(table_entry=pb.TableEntry(table_id=env.ids["mixed_t"], priority=10))
    assert len(ents) == 1 and [m.field_id for m in ents[0].table_entry.match] == [1]   # don't-cares omitted
    env.write(DELETE, table_entry=mixed_entry(env, 30, 0, in_port=5))
    assert env.ports(5, 0x0806) == [2]


def test_lpm_entry_and_scope_rules(env: Env) -> None:
    te = pb.TableEntry(table_id=env.ids["lpm_t"])
    fm = te.match.add(field_id=1)
    fm.lpm.value, fm.lpm.prefix_len = (0xB0).to_bytes(6, "big"), 44
    te.action.action.CopyFrom(action(env, "fwd", b"\x06"))
    env.write(INSERT, table_entry=te)
    assert env.ports(1, 0x0002) == [6]
    assert env.ports(1, 0x0002, src=0xC0) == [0]      # miss: only_default() leaves egress_spec 0
    bad = pb.TableEntry(); bad.CopyFrom(te); bad.action.action.CopyFrom(action(env, "only_default"))
    expect_code("PERMISSION_DENIED", lambda: env.write(MODIFY, table_entry=bad))
    default = pb.TableEntry(table_id=env.ids["lpm_t"], is_default_action=True,
                            action=pb.TableAction(action=action(env, "only_entry")))
    expect_code("PERMISSION_DENIED", lambda: env.write(MODIFY, table_entry=default))


def test_default_entry(env: Env) -> None:
    tid = env.ids["exact_t"]
    default = pb.TableEntry(table_id=tid, is_default_action=True,
                            action=pb.TableAction(action=action(env, "fwd_metered", b"\x05")), metadata=b"m")
    env.write(MODIFY, table_entry=default)
    assert env.ports(1, 0x0001) == [5]
    [ent] = env.read(table_entry=pb.TableEntry(table_id=tid, is_default_action=True))
    assert ent.table_entry.action.action.action_id == env.ids["fwd_metered"] and ent.table_entry.metadata == b"m"
    env.write(MODIFY, table_entry=pb.TableEntry(table_id=tid, is_default_action=True))   # reset
    assert env.ports(1, 0x0001) == []
    [ent] = env.read(table_entry=pb.TableEntry(table_id=tid, is_default_action=True))
    assert ent.table_entry.action.action.action_id == env.ids["drop"] and ent.table_entry.metadata == b""
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, table_entry=default))
    expect_code("INVALID_ARGUMENT", lambda: env.write(DELETE, table_entry=default))
    with_match = exact_entry(env, act=action(env, "drop"), is_default_action=True)
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, table_entry=with_match))
    const_default = pb.TableEntry(table_id=env.ids["const_t"], is_default_action=True,
                                  action=pb.TableAction(action=action(env, "fwd", b"\x01")))
    expect_code("PERMISSION_DENIED", lambda: env.write(MODIFY, table_entry=const_default))


def test_const_table(env: Env) -> None:
    tid = env.ids["const_t"]
    assert env.ports(1, 0x0101) == [7]
    [ent] = env.read(table_entry=pb.TableEntry(table_id=tid))
    assert ent.table_entry.is_const and ent.table_entry.match[0].exact.value == b"\x01\x01"
    te = pb.TableEntry(table_id=tid)
    te.match.add(field_id=1).exact.value = b"\x01\x01"
    # BMv2's codes: its const entries are not in PI's entry store (NOT_FOUND), INSERT fails in the target
    expect_code("NOT_FOUND", lambda: env.write(DELETE, table_entry=te))
    te2 = pb.TableEntry(); te2.CopyFrom(te); te2.action.action.CopyFrom(action(env, "fwd", b"\x02"))
    expect_code("NOT_FOUND", lambda: env.write(MODIFY, table_entry=te2))
    te2.match[0].exact.value = b"\x01\x02"
    expect_code("UNKNOWN", lambda: env.write(INSERT, table_entry=te2))


def test_table_entry_errors(env: Env) -> None:
    fwd3 = action(env, "fwd_metered", b"\x03")
    env.write(INSERT, table_entry=exact_entry(env, act=fwd3))

    def case(code: str, utype: int, te: pb.TableEntry) -> None:
        expect_code(code, lambda: env.write(utype, table_entry=te))

    case("ALREADY_EXISTS", INSERT, exact_entry(env, act=fwd3))
    case("NOT_FOUND", MODIFY, exact_entry(env, 9, fwd3))
    case("NOT_FOUND", DELETE, exact_entry(env, 9))
    case("INVALID_ARGUMENT", INSERT, pb.TableEntry(table_id=12345))                     # BMv2: Invalid P4 id
    case("INVALID_ARGUMENT", INSERT, pb.TableEntry(table_id=env.ids["exact_t"],
                                                   action=pb.TableAction(action=fwd3)))   # exact omitted
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5))                                # no action
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, action(env, "fwd", b"\x01")))  # not its action
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, action(env, "fwd_metered")))   # missing param
    # a value wider than its bitwidth: BMv2's INVALID_ARGUMENT (the spec's codec says OUT_OF_RANGE)
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, action(env, "fwd_metered", b"\x02\x00")))
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, action(env, "fwd_metered", b"")))
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, fwd3, priority=3))
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, fwd3, is_const=True))
    case("INVALID_ARGUMENT", INSERT, exact_entry(env, 5, fwd3, idle_timeout_ns=10))
    too_wide = exact_entry(env, 5, fwd3)
    too_wide.match[0].exact.value = b"\x01" + bytes(6)
    case("INVALID_ARGUMENT", INSERT, too_wide)
    unknown_field = exact_entry(env, 5, fwd3)
    unknown_field.match[0].field_id = 9
    case("INVALID_ARGUMENT", INSERT, unknown_field)
    wrong_kind = pb.TableEntry(table_id=env.ids["exact_t"], action=pb.TableAction(action=fwd3))
    wrong_kind.match.add(field_id=1).optional.value = b"\x05"
    case("INVALID_ARGUMENT", INSERT, wrong_kind)
    case("INVALID_ARGUMENT", INSERT, mixed_entry(env, 0, 1, etype=(1, 1)))              # priority needed
    case("INVALID_ARGUMENT", INSERT, mixed_entry(env, 5, 1, etype=(1, 0)))              # mask 0 given
    case("INVALID_ARGUMENT", INSERT, mixed_entry(env, 5, 1, etype=(3, 1)))              # bits outside mask
    case("INVALID_ARGUMENT", INSERT, mixed_entry(env, 5, 1, src=(0, (1 << 48) - 1)))    # full range given
    case("INVALID_ARGUMENT", INSERT, mixed_entry(env, 5, 1, src=(9, 8)))                # low > high
    lpm = pb.TableEntry(table_id=env.ids["lpm_t"], action=pb.TableAction(action=action(env, "fwd", b"\x01")))
    fm = lpm.match.add(field_id=1)
    fm.lpm.value, fm.lpm.prefix_len = b"\x00", 0
    case("INVALID_ARGUMENT", INSERT, lpm)                                               # /0 given
    fm.lpm.value, fm.lpm.prefix_len = b"\x01", 40
    case("INVALID_ARGUMENT", INSERT, lpm)                                               # bits past prefix
    fm.lpm.prefix_len = 49
    case("INVALID_ARGUMENT", INSERT, lpm)
    keyless_direct = exact_entry(env, 5, fwd3)
    keyless_direct.action.action_profile_member_id = 1
    case("INVALID_ARGUMENT", INSERT, keyless_direct)                                    # not indirect
    for i in range(15):                                                                 # size 16
        env.write(INSERT, table_entry=exact_entry(env, 100 + i, fwd3))
    case("RESOURCE_EXHAUSTED", INSERT, exact_entry(env, 5, fwd3))


def test_direct_counter_and_meter(env: Env) -> None:
    te = exact_entry(env, act=action(env, "fwd_metered", b"\x03"),
                     counter_data=pb.CounterData(packet_count=10, byte_count=100),
                     meter_config=pb.MeterConfig(cir=1, cburst=1, pir=2, pburst=2))
    env.write(INSERT, table_entry=te)
    assert env.ports(1, 0x0001) == [3]
    req = exact_entry(env, counter_data=pb.CounterData(), meter_config=pb.MeterConfig())
    [ent] = env.read(table_entry=req)
    assert (ent.table_entry.counter_data.packet_count, ent.table_entry.counter_data.byte_count) == (11, 122)
    assert ent.table_entry.meter_config.pburst == 2
    dce = pb.DirectCounterEntry(table_entry=exact_entry(env))
    [ent] = env.read(direct_counter_entry=dce)
    assert ent.direct_counter_entry.data.packet_count == 11
    env.write(MODIFY, direct_counter_entry=pb.DirectCounterEntry(table_entry=exact_entry(env),
                                                                 data=pb.CounterData(packet_count=1)))
    assert env.read(direct_counter_entry=dce)[0].direct_counter_entry.data.packet_count == 1
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, direct_counter_entry=dce))
    expect_code("INVALID_ARGUMENT", lambda: env.read(direct_counter_entry=pb.DirectCounterEntry(
        table_entry=exact_entry(env, 7))))          # BMv2: Cannot map table entry to handle
    dme = pb.DirectMeterEntry(table_entry=exact_entry(env), config=pb.MeterConfig(cir=5, cburst=5, pir=9, pburst=9))
    env.write(MODIFY, direct_meter_entry=dme)
    [ent] = env.read(direct_meter_entry=pb.DirectMeterEntry(table_entry=exact_entry(env)))
    assert ent.direct_meter_entry.config.pir == 9
    # a table-entry MODIFY without meter_config resets the meter; counter_data unset keeps the counter
    env.write(MODIFY, table_entry=exact_entry(env, act=action(env, "fwd_metered", b"\x03")))
    [ent] = env.read(table_entry=req)
    assert not ent.table_entry.HasField("meter_config") and ent.table_entry.counter_data.packet_count == 1
    no_counter = mixed_entry(env, 5, 1, etype=(1, 1))
    no_counter.counter_data.packet_count = 1
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, table_entry=no_counter))
    bad_meter = exact_entry(env, 6, action(env, "drop"), meter_config=pb.MeterConfig(cir=5, pir=1))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, table_entry=bad_meter))


def test_idle_timeout(env: Env) -> None:
    te = mixed_entry(env, 5, 1, etype=(1, 1))
    te.idle_timeout_ns = 1_000_000
    env.write(INSERT, table_entry=te)
    req = pb.TableEntry(table_id=env.ids["mixed_t"])
    req.time_since_last_hit.SetInParent()
    [ent] = env.read(table_entry=req)
    assert ent.table_entry.idle_timeout_ns == 1_000_000 and ent.table_entry.HasField("time_since_last_hit")
    te.time_since_last_hit.SetInParent()
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, table_entry=te))


# --------------------------------------------------------------------------- action profiles
def member(env: Env, profile: str, mid: int, port: int) -> pb.ActionProfileMember:
    return pb.ActionProfileMember(action_profile_id=env.ids[profile], member_id=mid,
                                  action=action(env, "fwd", bytes([port])))


def test_action_profile_members(env: Env) -> None:
    env.write(INSERT, action_profile_member=member(env, "prof", 1, 4))
    te = pb.TableEntry(table_id=env.ids["prof_t"])
    te.match.add(field_id=1).exact.value = b"\x00\x07"
    te.action.action_profile_member_id = 1
    env.write(INSERT, table_entry=te)
    assert env.ports(1, 0x0007) == [4]
    env.write(MODIFY, action_profile_member=member(env, "prof", 1, 5))
    assert env.ports(1, 0x0007) == [5]
    [ent] = env.read(action_profile_member=pb.ActionProfileMember())
    assert ent.action_profile_member.action.params[0].value == b"\x05"
    [ent] = env.read(table_entry=te)
    assert ent.table_entry.action.action_profile_member_id == 1
    # still used: BMv2's UNKNOWN ("Error when deleting member on target")
    expect_code("UNKNOWN", lambda: env.write(DELETE, action_profile_member=member(env, "prof", 1, 0)))
    expect_code("ALREADY_EXISTS", lambda: env.write(INSERT, action_profile_member=member(env, "prof", 1, 4)))
    expect_code("NOT_FOUND", lambda: env.write(MODIFY, action_profile_member=member(env, "prof", 2, 4)))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, action_profile_member=member(env, "prof", 0, 4)))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, action_profile_member=pb.ActionProfileMember(
        action_profile_id=1, member_id=3)))                     # BMv2: Invalid P4 id
    # a group of a profile without selector: accepted and read back (as BMv2), usable by no entry
    plain = pb.ActionProfileGroup(action_profile_id=env.ids["prof"], group_id=1)
    plain.members.add(member_id=1, weight=1)
    undo = env.write(INSERT, action_profile_group=plain)
    [ent] = env.read(action_profile_group=pb.ActionProfileGroup(action_profile_id=env.ids["prof"]))
    assert ent.action_profile_group == plain
    expect_code("UNKNOWN", lambda: env.write(DELETE, action_profile_member=member(env, "prof", 1, 0)))
    undo()
    assert env.read(action_profile_group=pb.ActionProfileGroup(action_profile_id=env.ids["prof"])) == []
    te2 = pb.TableEntry(); te2.CopyFrom(te); te2.match[0].exact.value = b"\x08"
    te2.action.action_profile_member_id = 9
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, table_entry=te2))   # BMv2: Invalid member / group id
    te2.action.action.CopyFrom(action(env, "fwd", b"\x01"))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, table_entry=te2))
    env.write(DELETE, table_entry=te)
    env.write(DELETE, action_profile_member=member(env, "prof", 1, 0))
    assert env.read(action_profile_member=pb.ActionProfileMember()) == []


def sel_entry(env: Env, etype: int = 0x0900) -> pb.TableEntry:
    te = pb.TableEntry(table_id=env.ids["sel_t"])
    te.match.add(field_id=1).exact.value = etype.to_bytes(2, "big")
    return te


def test_selector_groups(env: Env) -> None:
    for mid, port in ((10, 1), (11, 2), (12, 3)):
        env.write(INSERT, action_profile_member=member(env, "ecmp", mid, port))
    grp = pb.ActionProfileGroup(action_profile_id=env.ids["ecmp"], group_id=1)
    for mid in (12, 10, 11):
        grp.members.add(member_id=mid, weight=1)
    env.write(INSERT, action_profile_group=grp)
    te = sel_entry(env)
    te.action.action_profile_group_id = 1
    env.write(INSERT, table_entry=te)
    # identity hash of the 48-bit src: h % 3 picks the member by handle (10, 11, 12)
    assert [env.ports(9, 0x0900, src=s)[0] for s in (0, 1, 2, 3)] == [1, 2, 3, 1]
    [ent] = env.read(action_profile_group=pb.ActionProfileGroup())
    assert [m.member_id for m in ent.action_profile_group.members] == [12, 10, 11]
    grp2 = pb.ActionProfileGroup(); grp2.CopyFrom(grp); del grp2.members[2]
    env.write(MODIFY, action_profile_group=grp2)
    assert [env.ports(9, 0x0900, src=s)[0] for s in (0, 1)] == [1, 3]
    grp2.max_size = 4
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, action_profile_group=grp2))
    expect_code("UNKNOWN", lambda: env.write(DELETE, action_profile_group=grp))     # BMv2's code
    heavy = pb.ActionProfileGroup(); heavy.CopyFrom(grp); heavy.group_id = 2; heavy.members[0].weight = 2
    undo = env.write(INSERT, action_profile_group=heavy)         # BMv2 accepts weights; read back as written
    [ent] = env.read(action_profile_group=pb.ActionProfileGroup(action_profile_id=env.ids["ecmp"], group_id=2))
    assert [(m.member_id, m.weight) for m in ent.action_profile_group.members] == [(12, 2), (10, 1), (11, 1)]
    undo()
    heavy.members[0].weight = 0
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, action_profile_group=heavy))
    missing = pb.ActionProfileGroup(action_profile_id=env.ids["ecmp"], group_id=3)
    missing.members.add(member_id=99, weight=1)
    expect_code("NOT_FOUND", lambda: env.write(INSERT, action_profile_group=missing))
    oneshot = sel_entry(env, 0x0901)
    oneshot.action.action_profile_action_set.action_profile_actions.add(action=action(env, "fwd", b"\x01"), weight=1)
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, table_entry=oneshot))   # no mixing


def test_one_shot_selector_entries(env: Env) -> None:
    te = sel_entry(env)
    aset = te.action.action_profile_action_set
    for port in (4, 5):
        aset.action_profile_actions.add(action=action(env, "fwd", bytes([port])), weight=1)
    env.write(INSERT, table_entry=te)
    assert [env.ports(9, 0x0900, src=s)[0] for s in (0, 1)] == [4, 5]
    [ent] = env.read(table_entry=sel_entry(env))
    assert ent.table_entry.action.action_profile_action_set == aset
    assert env.read(action_profile_member=pb.ActionProfileMember()) == []   # hidden
    assert env.read(action_profile_group=pb.ActionProfileGroup()) == []
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, action_profile_member=member(env, "ecmp", 1, 1)))
    te2 = sel_entry(env)
    te2.action.action_profile_action_set.action_profile_actions.add(action=action(env, "fwd", b"\x06"), weight=1)
    env.write(MODIFY, table_entry=te2)
    assert env.ports(9, 0x0900, src=1) == [6]
    ecmp = env.prog.state.action_profiles["Ing.ecmp"]
    assert len(ecmp.members) == 1 and len(ecmp.groups) == 1
    env.write(DELETE, table_entry=sel_entry(env))
    assert not ecmp.members and not ecmp.groups
    heavy = sel_entry(env)
    heavy.action.action_profile_action_set.action_profile_actions.add(action=action(env, "fwd", b"\x00\x06"),
                                                                      weight=3)
    env.write(INSERT, table_entry=heavy)         # BMv2 accepts weights; read back canonical, weight kept
    [ent] = env.read(table_entry=sel_entry(env))
    [apa] = ent.table_entry.action.action_profile_action_set.action_profile_actions
    assert (apa.action.params[0].value, apa.weight) == (b"\x06", 3)
    env.write(DELETE, table_entry=sel_entry(env))
    assert not ecmp.members


# --------------------------------------------------------------------------- indexed externs
def test_counter_entries(env: Env) -> None:
    cid = env.ids["pkts"]
    env.send(2, 0x0003)
    [ent] = env.read(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=2)))
    assert ent.counter_entry.data.packet_count == 1 and ent.counter_entry.data.byte_count == 22
    env.write(MODIFY, counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=2),
                                                    data=pb.CounterData(packet_count=7, byte_count=70)))
    env.send(2, 0x0003)
    [ent] = env.read(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=2)))
    assert (ent.counter_entry.data.packet_count, ent.counter_entry.data.byte_count) == (8, 92)
    assert len(env.read(counter_entry=pb.CounterEntry(counter_id=cid))) == 8
    assert len(env.read(counter_entry=pb.CounterEntry())) == 8
    env.write(MODIFY, counter_entry=pb.CounterEntry(counter_id=cid, data=pb.CounterData()))   # all cells
    assert all(e.counter_entry.data.packet_count == 0 for e in env.read(counter_entry=pb.CounterEntry()))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, counter_entry=pb.CounterEntry(counter_id=cid)))
    # as BMv2: a DELETE is a MODIFY, and without data it resets the cell
    env.write(MODIFY, counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=2),
                                                    data=pb.CounterData(packet_count=7, byte_count=70)))
    env.write(DELETE, counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=2)))
    [ent] = env.read(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=2)))
    assert (ent.counter_entry.data.packet_count, ent.counter_entry.data.byte_count) == (0, 0)
    expect_code("UNKNOWN", lambda: env.read(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=8))))
    expect_code("INVALID_ARGUMENT", lambda: env.read(counter_entry=pb.CounterEntry(
        counter_id=cid, index=pb.Index(index=-1))))
    expect_code("INVALID_ARGUMENT", lambda: env.read(counter_entry=pb.CounterEntry(counter_id=99)))


def test_meter_entries(env: Env) -> None:
    mid = env.ids["rate"]
    cfg = pb.MeterConfig(cir=10, cburst=2, pir=20, pburst=4)
    env.write(MODIFY, meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=1), config=cfg))
    [ent] = env.read(meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=1)))
    assert ent.meter_entry.config == cfg
    assert [e.meter_entry.HasField("config") for e in env.read(meter_entry=pb.MeterEntry(meter_id=mid))] == \
        [False, True, False, False]
    env.write(MODIFY, meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=1)))   # reset
    [ent] = env.read(meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=1)))
    assert not ent.meter_entry.HasField("config")
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, meter_entry=pb.MeterEntry(
        meter_id=mid, config=pb.MeterConfig(cir=10, pir=20, eburst=3))))
    expect_code("UNKNOWN", lambda: env.write(MODIFY, meter_entry=pb.MeterEntry(     # BMv2's code
        meter_id=mid, config=pb.MeterConfig(cir=30, pir=20))))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, meter_entry=pb.MeterEntry(meter_id=mid)))
    expect_code("UNKNOWN", lambda: env.write(MODIFY, meter_entry=pb.MeterEntry(
        meter_id=mid, index=pb.Index(index=4))))


def test_register_entries(env: Env) -> None:
    rid = env.ids["regs"]
    env.write(MODIFY, register_entry=pb.RegisterEntry(register_id=rid, index=pb.Index(index=2),
                                                      data=p4data_pb2.P4Data(bitstring=b"\x00\x00\x00\x05")))
    assert env.ports(2, 0x0003) == [5]               # the data plane reads the written value
    [ent] = env.read(register_entry=pb.RegisterEntry(register_id=rid, index=pb.Index(index=2)))
    assert ent.register_entry.data.bitstring == b"\x06"   # and incremented it
    env.write(MODIFY, register_entry=pb.RegisterEntry(register_id=rid, data=p4data_pb2.P4Data(bitstring=b"\x09")))
    assert {e.register_entry.data.bitstring for e in env.read(register_entry=pb.RegisterEntry())} == {b"\x09"}
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, register_entry=pb.RegisterEntry(
        register_id=rid, data=p4data_pb2.P4Data(bitstring=b"\x01" + bytes(4)))))
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, register_entry=pb.RegisterEntry(
        register_id=rid, data=p4data_pb2.P4Data(bool=True))))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, register_entry=pb.RegisterEntry(register_id=rid)))
    expect_code("INVALID_ARGUMENT", lambda: env.write(MODIFY, register_entry=pb.RegisterEntry(register_id=5)))


# --------------------------------------------------------------------------- PRE and digests
def mc_group(gid: int, *replicas: tuple[int, int], metadata: bytes = b"") -> pb.PacketReplicationEngineEntry:
    pre = pb.PacketReplicationEngineEntry()
    g = pre.multicast_group_entry
    g.multicast_group_id = gid
    g.metadata = metadata
    for port, inst in replicas:
        if port % 2:
            g.replicas.add(egress_port=port, instance=inst)
        else:
            g.replicas.add(port=bytes([port]), instance=inst)   # the 1.4 bytes form
    return pre


def test_multicast_groups(env: Env) -> None:
    env.write(INSERT, packet_replication_engine_entry=mc_group(1, (1, 0), (2, 0), metadata=b"md"))
    env.write(INSERT, table_entry=exact_entry(env, act=action(env, "mcast", b"\x01")))
    assert sorted(env.ports(0, 0x0001)) == [1, 2]
    [ent] = env.read(packet_replication_engine_entry=pb.PacketReplicationEngineEntry())
    assert ent.packet_replication_engine_entry == mc_group(1, (1, 0), (2, 0), metadata=b"md")
    env.write(MODIFY, packet_replication_engine_entry=mc_group(1, (3, 0)))
    assert env.ports(0, 0x0001) == [3]
    expect_code("ALREADY_EXISTS", lambda: env.write(INSERT, packet_replication_engine_entry=mc_group(1)))
    expect_code("NOT_FOUND", lambda: env.write(MODIFY, packet_replication_engine_entry=mc_group(2)))
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, packet_replication_engine_entry=mc_group(0)))
    expect_code("INVALID_ARGUMENT", lambda: env.write(
        INSERT, packet_replication_engine_entry=mc_group(2, (1, 0), (1, 0))))
    env.write(DELETE, packet_replication_engine_entry=mc_group(1))
    assert env.ports(0, 0x0001) == []
    assert env.read(packet_replication_engine_entry=pb.PacketReplicationEngineEntry()) == []


def test_clone_sessions(env: Env) -> None:
    cs = pb.PacketReplicationEngineEntry()
    cs.clone_session_entry.session_id = 5
    cs.clone_session_entry.replicas.add(egress_port=4, instance=1)
    cs.clone_session_entry.packet_length_bytes = 64
    env.write(INSERT, packet_replication_engine_entry=cs)
    [ent] = env.read(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
        clone_session_entry=pb.CloneSessionEntry()))
    assert ent.packet_replication_engine_entry == cs
    assert env.prog.state.pre.clone_replicas(5) == [(4, 1)]
    cs.clone_session_entry.replicas[0].egress_port = 6
    env.write(MODIFY, packet_replication_engine_entry=cs)
    assert env.prog.state.pre.clone_replicas(5) == [(6, 1)]
    cs.clone_session_entry.class_of_service = 1
    expect_code("UNIMPLEMENTED", lambda: env.write(MODIFY, packet_replication_engine_entry=cs))
    cs.clone_session_entry.session_id = 0
    expect_code("INVALID_ARGUMENT", lambda: env.write(INSERT, packet_replication_engine_entry=cs))
    env.write(DELETE, packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
        clone_session_entry=pb.CloneSessionEntry(session_id=5)))
    assert env.prog.state.pre.clone_replicas(5) == []


def test_digest_entries(env: Env) -> None:
    did = env.ids["learn_t"]
    cfg = pb.DigestEntry.Config(max_timeout_ns=1000, max_list_size=2, ack_timeout_ns=5)
    env.write(INSERT, digest_entry=pb.DigestEntry(digest_id=did, config=cfg))
    assert env.prog.state.digests.get_config("learn_t").max_list_size == 2
    [ent] = env.read(digest_entry=pb.DigestEntry())
    assert ent.digest_entry.config == cfg
    env.write(INSERT, table_entry=exact_entry(env, act=action(env, "learn")))
    for _ in range(3):
        env.send(4, 0x0001)
    assert [len(d.values) for d in env.prog.state.digests.drain()] == [2, 1]   # batched by max_list_size
    expect_code("ALREADY_EXISTS", lambda: env.write(INSERT, digest_entry=pb.DigestEntry(digest_id=did, config=cfg)))
    env.write(MODIFY, digest_entry=pb.DigestEntry(digest_id=did, config=pb.DigestEntry.Config(max_list_size=1)))
    env.write(DELETE, digest_entry=pb.DigestEntry(digest_id=did))
    assert env.read(digest_entry=pb.DigestEntry()) == []
    expect_code("NOT_FOUND", lambda: env.write(MODIFY, digest_entry=pb.DigestEntry(digest_id=did, config=cfg)))
    expect_code("NOT_FOUND", lambda: env.write(DELETE, digest_entry=pb.DigestEntry(digest_id=did)))
    expect_code("NOT_FOUND", lambda: env.write(INSERT, digest_entry=pb.DigestEntry(digest_id=7, config=cfg)))


def test_malformed_entities(env: Env) -> None:
    # BMv2's codes: "Incorrect entity type" (UNKNOWN), value sets UNIMPLEMENTED
    expect_code("UNKNOWN", lambda: env.store.write(pb.Update(type=INSERT, entity=pb.Entity())))
    expect_code("INVALID_ARGUMENT", lambda: env.store.write(pb.Update(
        type=pb.Update.UNSPECIFIED, entity=pb.Entity(table_entry=exact_entry(env)))))
    expect_code("UNKNOWN", lambda: env.read(extern_entry=pb.ExternEntry()))
    expect_code("UNIMPLEMENTED", lambda: env.store.write(pb.Update(type=pb.Update.MODIFY, entity=pb.Entity(
        extern_entry=pb.ExternEntry()))))
    expect_code("UNIMPLEMENTED", lambda: env.read(value_set_entry=pb.ValueSetEntry(value_set_id=1)))


# --------------------------------------------------------------------------- undo and atomicity
def populate(env: Env) -> None:
    """State of every kind, with a free handle below the last entry of exact_t."""
    for dst in (1, 2, 3):
        env.write(INSERT, table_entry=exact_entry(env, dst, action(env, "fwd_metered", bytes([dst])),
                                                  counter_data=pb.CounterData(packet_count=dst),
                                                  meter_config=pb.MeterConfig(cir=1, cburst=1, pir=2, pburst=2)))
    env.write(DELETE, table_entry=exact_entry(env, 1))
    env.write(INSERT, table_entry=mixed_entry(env, 5, 1, etype=(0x0800, 0xFF00)))
    env.write(INSERT, table_entry=mixed_entry(env, 5, 2, in_port=3))
    env.write(INSERT, action_profile_member=member(env, "prof", 1, 1))
    env.write(INSERT, action_profile_member=member(env, "prof", 2, 2))
    te = pb.TableEntry(table_id=env.ids["prof_t"])
    te.match.add(field_id=1).exact.value = b"\x07"
    te.action.action_profile_member_id = 2
    env.write(INSERT, table_entry=te)
    one = sel_entry(env)
    one.action.action_profile_action_set.action_profile_actions.add(action=action(env, "fwd", b"\x01"), weight=1)
    env.write(INSERT, table_entry=one)
    env.write(MODIFY, counter_entry=pb.CounterEntry(counter_id=env.ids["pkts"], index=pb.Index(index=1),
                                                    data=pb.CounterData(packet_count=3, byte_count=4)))
    env.write(MODIFY, meter_entry=pb.MeterEntry(meter_id=env.ids["rate"], index=pb.Index(index=0),
                                                config=pb.MeterConfig(cir=1, cburst=1, pir=1, pburst=1)))
    env.write(MODIFY, register_entry=pb.RegisterEntry(register_id=env.ids["regs"], index=pb.Index(index=3),
                                                      data=p4data_pb2.P4Data(bitstring=b"\x03")))
    env.write(INSERT, packet_replication_engine_entry=mc_group(1, (1, 1), (2, 2), (3, 1)))
    cs = pb.PacketReplicationEngineEntry()
    cs.clone_session_entry.session_id = 3
    cs.clone_session_entry.replicas.add(egress_port=3, instance=0)
    env.write(INSERT, packet_replication_engine_entry=cs)
    env.write(INSERT, digest_entry=pb.DigestEntry(digest_id=env.ids["learn_t"],
                                                  config=pb.DigestEntry.Config(max_list_size=3)))
    env.write(MODIFY, table_entry=pb.TableEntry(table_id=env.ids["exact_t"], is_default_action=True,
                                                action=pb.TableAction(action=action(env, "mcast", b"\x01"))))


def successful_updates(env: Env) -> list[dict[str, Any]]:
    """One update of every kind and type that succeeds on the populated state."""
    one2 = sel_entry(env)
    for port in (2, 3):
        one2.action.action_profile_action_set.action_profile_actions.add(
            action=action(env, "fwd", bytes([port])), weight=1)
    new_one = sel_entry(env, 0x0905)
    new_one.action.CopyFrom(one2.action)
    prof_entry = pb.TableEntry(table_id=env.ids["prof_t"])
    prof_entry.match.add(field_id=1).exact.value = b"\x07"
    prof_entry2 = pb.TableEntry(); prof_entry2.CopyFrom(prof_entry); prof_entry2.action.action_profile_member_id = 1
    mc_del = mc_group(1)
    cs = pb.PacketReplicationEngineEntry(clone_session_entry=pb.CloneSessionEntry(session_id=3))
    cs_mod = pb.PacketReplicationEngineEntry(); cs_mod.CopyFrom(cs)
    cs_mod.clone_session_entry.replicas.add(egress_port=9, instance=2)
    U = pb.Update
    return [
        dict(type=U.INSERT, table_entry=exact_entry(env, 9, action(env, "drop"))),
        dict(type=U.INSERT, table_entry=exact_entry(env, 1, action(env, "drop"))),     # reuses the free handle
        dict(type=U.MODIFY, table_entry=exact_entry(env, 2, action(env, "mcast", b"\x02"),
                                                    counter_data=pb.CounterData(packet_count=50))),
        dict(type=U.MODIFY, table_entry=exact_entry(env, 3)),                          # resets the meter
        dict(type=U.DELETE, table_entry=exact_entry(env, 2)),
        dict(type=U.DELETE, table_entry=mixed_entry(env, 5, 0, etype=(0x0800, 0xFF00))),
        dict(type=U.MODIFY, table_entry=pb.TableEntry(table_id=env.ids["exact_t"], is_default_action=True)),
        dict(type=U.MODIFY, table_entry=one2),
        dict(type=U.DELETE, table_entry=sel_entry(env)),
        dict(type=U.INSERT, table_entry=new_one),
        dict(type=U.MODIFY, table_entry=prof_entry2),
        dict(type=U.DELETE, table_entry=prof_entry),
        dict(type=U.INSERT, action_profile_member=member(env, "prof", 3, 3)),
        dict(type=U.MODIFY, action_profile_member=member(env, "prof", 2, 9)),
        dict(type=U.DELETE, action_profile_member=member(env, "prof", 1, 0)),
        dict(type=U.MODIFY, counter_entry=pb.CounterEntry(counter_id=env.ids["pkts"], data=pb.CounterData())),
        dict(type=U.MODIFY, direct_counter_entry=pb.DirectCounterEntry(table_entry=exact_entry(env, 3),
                                                                       data=pb.CounterData(byte_count=9))),
        dict(type=U.MODIFY, meter_entry=pb.MeterEntry(meter_id=env.ids["rate"])),
        dict(type=U.MODIFY, direct_meter_entry=pb.DirectMeterEntry(table_entry=exact_entry(env, 3))),
        dict(type=U.MODIFY, register_entry=pb.RegisterEntry(register_id=env.ids["regs"],
                                                            data=p4data_pb2.P4Data(bitstring=b"\x01"))),
        dict(type=U.MODIFY, packet_replication_engine_entry=mc_group(1, (4, 1))),
        dict(type=U.DELETE, packet_replication_engine_entry=mc_del),
        dict(type=U.INSERT, packet_replication_engine_entry=mc_group(2, (4, 1))),
        dict(type=U.MODIFY, packet_replication_engine_entry=cs_mod),
        dict(type=U.DELETE, packet_replication_engine_entry=cs),
        dict(type=U.MODIFY, digest_entry=pb.DigestEntry(digest_id=env.ids["learn_t"],
                                                        config=pb.DigestEntry.Config(max_list_size=9))),
        dict(type=U.DELETE, digest_entry=pb.DigestEntry(digest_id=env.ids["learn_t"])),
    ]


def as_update(spec: dict[str, Any]) -> pb.Update:
    spec = dict(spec)
    utype = spec.pop("type")
    return pb.Update(type=utype, entity=pb.Entity(**spec))


def test_each_undo_restores_the_exact_state(env: Env) -> None:
    populate(env)
    for spec in successful_updates(env):
        before = fingerprint(env)
        undo = env.store.write(as_update(spec))
        assert fingerprint(env) != before, spec
        undo()
        assert fingerprint(env) == before, spec


def test_batch_undo_in_reverse_order(env: Env) -> None:
    populate(env)
    before = fingerprint(env)
    undos = [env.store.write(as_update(spec)) for spec in successful_updates(env)]
    for undo in reversed(undos):
        undo()
    assert fingerprint(env) == before
    assert sorted(env.ports(1, 0x0001, dst=d)[0] for d in (2, 3)) == [2, 3]   # entries in effect again


def test_failed_writes_change_nothing(env: Env) -> None:
    populate(env)
    before = fingerprint(env)
    half_valid = sel_entry(env, 0x0906)
    aset = half_valid.action.action_profile_action_set
    aset.action_profile_actions.add(action=action(env, "fwd", b"\x01"), weight=1)
    aset.action_profile_actions.add(action=action(env, "fwd", b"\x02\x00"), weight=1)   # too wide
    full_prof = [member(env, "prof", 10 + i, 1) for i in range(6)]                     # profile size 8
    failing = [
        (half_valid, "INVALID_ARGUMENT"),
        (exact_entry(env, 2, action(env, "drop"), counter_data=pb.CounterData(packet_count=-1)), "INVALID_ARGUMENT"),
        (exact_entry(env, 2, action(env, "drop"), meter_config=pb.MeterConfig(cir=3, pir=1)), "INVALID_ARGUMENT"),
    ]
    for te, code in failing:
        expect_code(code, lambda: env.write(MODIFY if te.table_id == env.ids["exact_t"] else INSERT, table_entry=te))
        assert fingerprint(env) == before
    for m in full_prof:
        env.write(INSERT, action_profile_member=m)
    expect_code("RESOURCE_EXHAUSTED", lambda: env.write(INSERT, action_profile_member=member(env, "prof", 30, 1)))
