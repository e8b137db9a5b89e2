"""P4Info generation (p4sim.p4info) and ``python -m p4sim compile``."""
from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4sim.__main__ import main
from p4sim.engine import load_program_text
from p4sim.p4info import build_p4info, jenkins_hash, symbol_id, write_p4info

PROGRAM = r'''
#include <core.p4>
#include <v1model.p4>
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct learn_t { bit<48> src; bit<9> port; }
struct headers_t { packet_in_t pin; packet_out_t pout; eth_t eth; }
struct meta_t { bit<8> m; }
parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply {} }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    counter(64, CounterType.packets) pkt_counter;
    direct_counter(CounterType.bytes) dc;
    meter(32, MeterType.bytes) mtr;
    register<bit<32>>(128) reg;
    action_selector(HashAlgorithm.crc16, 16, 14) sel;
    @brief("forward it") @my_anno("x")
    action fwd(bit<9> port, @id(7) bit<48> mac) { sm.egress_spec = port; h.eth.dst = mac; }
    @id(0x42) action drop() { mark_to_drop(sm); }
    @name("learn_it") action learn() { digest<learn_t>(1, {h.eth.src, sm.ingress_port}); }
    table t_exact {
        key = { h.eth.dst : exact; h.eth.etype : ternary @name("ethertype"); sm.ingress_port : lpm;
                h.eth.src : range; m.m : optional; }
        actions = { fwd; @defaultonly drop; }
        counters = dc;
        size = 64;
        support_timeout = true;
    }
    @id(5) table t_sel {
        key = { h.eth.dst : exact; h.eth.src : selector; }
        actions = { fwd; learn; }
        implementation = sel;
        const default_action = learn();
    }
    apply {
        t_exact.apply(); t_sel.apply();
        pkt_counter.count(0);
        bit<32> c; mtr.execute_meter(1, c);
        reg.write(0, c);
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control CC(inout headers_t h, inout meta_t m) { apply {} }
control D(packet_out pk, in headers_t h) { apply { pk.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
'''


def _info() -> p4info_pb2.P4Info:
    return build_p4info(load_program_text(PROGRAM, "p4info_prog.p4"))


def test_hash_matches_p4c_known_ids() -> None:
    # ids p4c gives the tutorials' basic.p4 (committed P4Info files)
    assert symbol_id(1, "NoAction") == 21257015
    assert symbol_id(1, "MyIngress.drop") == 25652968
    assert symbol_id(1, "MyIngress.ipv4_forward") == 28792405
    assert symbol_id(2, "MyIngress.ipv4_lpm") == 37375156
    assert jenkins_hash("") == 0


def test_tables() -> None:
    info = _info()
    tables = {t.preamble.name: t for t in info.tables}
    assert set(tables) == {"I.t_exact", "I.t_sel"}
    t = tables["I.t_exact"]
    assert t.preamble.id == symbol_id(2, "I.t_exact") and t.preamble.alias == "t_exact"
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in t.match_fields] == [
        (1, "h.eth.dst", 48, p4info_pb2.MatchField.EXACT),
        (2, "ethertype", 16, p4info_pb2.MatchField.TERNARY),
        (3, "sm.ingress_port", 9, p4info_pb2.MatchField.LPM),
        (4, "h.eth.src", 48, p4info_pb2.MatchField.RANGE),
        (5, "m.m", 8, p4info_pb2.MatchField.OPTIONAL)]
    acts = {a.preamble.id: a.preamble.name for a in info.actions}
    refs = [(acts[r.id], r.scope, list(r.annotations)) for r in t.action_refs]
    assert refs == [("I.fwd", p4info_pb2.ActionRef.TABLE_AND_DEFAULT, []),
                    ("I.drop", p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"]),
                    # no default_action: the implicit NoAction default, as p4c adds it
                    ("NoAction", p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])]
    assert t.size == 64 and t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    dc = info.direct_counters[0]
    assert list(t.direct_resource_ids) == [dc.preamble.id] and dc.direct_table_id == t.preamble.id
    s = tables["I.t_sel"]
    assert s.preamble.id == 0x02000005
    assert [f.name for f in s.match_fields] == ["h.eth.dst"]
    assert s.const_default_action_id == symbol_id(1, "I.learn_it")
    prof = info.action_profiles[0]
    assert prof.preamble.name == "I.sel" and prof.with_selector and prof.size == 16
    assert s.implementation_id == prof.preamble.id >> 0 and list(prof.table_ids) == [s.preamble.id]


def test_actions_and_externs() -> None:
    info = _info()
    acts = {a.preamble.name: a for a in info.actions}
    assert set(acts) == {"NoAction", "I.fwd", "I.drop", "I.learn_it"}
    assert acts["NoAction"].preamble.id == 21257015
    assert list(acts["NoAction"].preamble.annotations) == ['@noWarn("unused")']
    fwd = acts["I.fwd"]
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "port", 9), (7, "mac", 48)]
    assert fwd.preamble.doc.brief == "forward it"
    assert list(fwd.preamble.annotations) == ['@my_anno("x")']
    assert acts["I.drop"].preamble.id == 0x01000042
    assert all(a.preamble.id >> 24 == 1 for a in info.actions)
    (c,) = info.counters
    assert (c.preamble.name, c.preamble.id >> 24, c.size, c.spec.unit) == ("I.pkt_counter", 0x12, 64,
                                                                           p4info_pb2.CounterSpec.PACKETS)
    assert info.direct_counters[0].preamble.id >> 24 == 0x13
    assert info.direct_counters[0].spec.unit == p4info_pb2.CounterSpec.BYTES
    (m,) = info.meters
    assert (m.preamble.id >> 24, m.size, m.spec.unit) == (0x14, 32, p4info_pb2.MeterSpec.BYTES)
    (r,) = info.registers
    assert (r.preamble.name, r.preamble.id >> 24, r.size, r.type_spec.bitstring.bit.bitwidth) == (
        "I.reg", 0x16, 128, 32)
    assert info.action_profiles[0].preamble.id >> 24 == 0x11


def test_digest_and_controller_headers() -> None:
    info = _info()
    (d,) = info.digests
    assert d.preamble.name == "learn_t" and d.preamble.id == symbol_id(0x17, "learn_t")
    assert d.type_spec.struct.name == "learn_t"
    members = [(mm.name, mm.type_spec.bitstring.bit.bitwidth) for mm in info.type_info.structs["learn_t"].members]
    assert members == [("src", 48), ("port", 9)]
    cpm = {c.preamble.name: c for c in info.controller_packet_metadata}
    assert set(cpm) == {"packet_in", "packet_out"}
    pin = cpm["packet_in"]
    assert pin.preamble.id == symbol_id(0x04, "packet_in_t") and pin.preamble.alias == "packet_in"
    assert list(pin.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(x.id, x.name, x.bitwidth) for x in pin.metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]


def test_ids_unique_and_text_round_trip(tmp_path: Path) -> None:
    info = _info()
    assert info.pkg_info.arch == "v1model"
    ids = [o.preamble.id for kind in ("tables", "actions", "action_profiles", "counters", "direct_counters",
                                      "meters", "direct_meters", "registers", "digests",
                                      "controller_packet_metadata") for o in getattr(info, kind)]
    assert len(ids) == len(set(ids)) and all(ids)
    write_p4info(info, str(tmp_path / "p.txtpb"), str(tmp_path / "p.bin"))
    again = text_format.Parse((tmp_path / "p.txtpb").read_text(), p4info_pb2.P4Info())
    assert again == info
    assert p4info_pb2.P4Info.FromString((tmp_path / "p.bin").read_bytes()) == info


def test_compile_cli(tmp_path: Path) -> None:
    from p4sim.device import DeviceConfig
    from p4sim.engine import load_program_text

    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM)
    out_txt, out_bin, cfg = tmp_path / "p.txtpb", tmp_path / "p.bin", tmp_path / "cfg.json"
    rc = main(["compile", str(src), "--p4info", str(out_txt), "--p4info-bin", str(out_bin),
               "--config", str(cfg)])
    assert rc == 0
    info = text_format.Parse(out_txt.read_text(), p4info_pb2.P4Info())
    assert {t.preamble.name for t in info.tables} == {"I.t_exact", "I.t_sel"}
    conf = DeviceConfig.from_json(cfg.read_text())
    assert conf.name == "prog.p4"
    reloaded = load_program_text(conf.source, conf.name)   # self-contained: no include paths needed
    assert set(reloaded.state.tables) == {"I.t_exact", "I.t_sel"}


def test_collision_probes_linearly_and_aliases() -> None:
    from p4sim.p4info import PREFIX_TABLE, SymbolTable

    st = SymbolTable()
    taken = symbol_id(PREFIX_TABLE, "a.t") & 0xFFFFFF
    st.add(PREFIX_TABLE, "b.t")
    st.add(PREFIX_TABLE, "a.t")
    st.add(PREFIX_TABLE, "x.u", explicit_id=taken)  # an @id without prefix takes a.t's hashed id
    st.assign_ids()
    assert st.id(PREFIX_TABLE, "x.u") == (PREFIX_TABLE << 24) | taken
    assert st.id(PREFIX_TABLE, "a.t") == (PREFIX_TABLE << 24) | ((taken + 1) & 0xFFFFFF)
    assert (st.alias("a.t"), st.alias("b.t"), st.alias("x.u")) == ("a.t", "b.t", "u")
