"""Which actions P4Info lists, and with which parameters, by p4c's rules.

p4c-bm2-ss writes the P4Info after its front end, which inlines an action another action
calls (InlineActions), turns the parameters of an action a control's body calls into
locals (RemoveActionParameters) and then removes every declaration nothing refers to
(RemoveAllUnusedDeclarations); the serializer lists the actions left among each
control's locals, except ``@hidden`` ones (control-plane/p4RuntimeSerializer.cpp,
``analyzeControl``/``addAction``). So P4Info has the actions a table refers to (a
``@hidden`` table's included), each with its directionless parameters, numbered from 1,
and the actions a control's body calls, without parameters. The expected lists are what
p4c-bm2-ss 1.2.5.16 wrote for these programs.

The programs are shaped like the p4lang/tutorials solutions (an LPM router as in basic,
a helper action called by table actions as in calc, actions called straight from
``apply`` as in qos and source_routing), written here.
"""
from __future__ import annotations

import pytest

from p4sim.engine import load_program_text
from p4sim.errors import P4Error
from p4sim.p4info import build_p4info

HEAD = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ip_t { bit<8> tos; bit<8> ttl; bit<32> src; bit<32> dst; }
struct headers_t { eth_t eth; ip_t ip; }
struct meta_t { bit<32> result; bit<8> hops; }
parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); pk.extract(h.ip); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
"""
TAIL = """
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t h) { apply { pk.emit(h.eth); pk.emit(h.ip); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
EMPTY_EGRESS = "control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }\n"


def ingress(body: str) -> str:
    return ("control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {\n"
            + body + "\n}\n")


# name -> the expected actions: {control-plane name: [(param id, name, bitwidth), ...]}
CASES = [
    # basic: one LPM route table
    pytest.param(ingress("""
    action drop() { mark_to_drop(sm); }
    action forward(bit<48> dstAddr, bit<9> port) {
        sm.egress_spec = port; h.eth.src = h.eth.dst; h.eth.dst = dstAddr; h.ip.ttl = h.ip.ttl - 1;
    }
    table routes {
        key = { h.ip.dst : lpm; }
        actions = { forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply { if (h.ip.isValid()) { routes.apply(); } }"""),
        {"NoAction": [], "I.drop": [], "I.forward": [(1, "dstAddr", 48), (2, "port", 9)]}, id="basic-router"),
    # calc: the table's actions call a helper action with an argument; the helper is inlined
    pytest.param(ingress("""
    action send_back(bit<32> result) { m.result = result; sm.egress_spec = sm.ingress_port; }
    action op_add() { send_back(h.ip.src + h.ip.dst); }
    action op_sub() { send_back(h.ip.src - h.ip.dst); }
    action op_drop() { mark_to_drop(sm); }
    table calculate {
        key = { h.ip.tos : exact; }
        actions = { op_add; op_sub; op_drop; }
        const default_action = op_drop();
        const entries = { 1 : op_add(); 2 : op_sub(); }
    }
    apply { calculate.apply(); }"""),
        {"I.op_add": [], "I.op_sub": [], "I.op_drop": []}, id="calc-helper-inlined"),
    # qos: actions called straight from apply are listed without parameters; an action
    # nothing uses is removed
    pytest.param(ingress("""
    action mark_voice() { h.ip.tos = 46; }
    action mark_default(bit<8> tos) { h.ip.tos = tos; }
    action never_used(bit<9> port) { sm.egress_spec = port; }
    action set_port(bit<9> port) { sm.egress_spec = port; }
    table ports { key = { h.ip.dst : exact; } actions = { set_port; } }
    apply {
        if (h.ip.ttl == 1) { mark_voice(); } else { mark_default(8w0); }
        ports.apply();
    }"""),
        {"NoAction": [], "I.mark_voice": [], "I.mark_default": [], "I.set_port": [(1, "port", 9)]},
        id="qos-direct-calls-without-parameters"),
    # source_routing: no table at all; the actions apply calls, without parameters
    pytest.param(ingress("""
    action next_hop(bit<9> port) { sm.egress_spec = port; h.ip.ttl = h.ip.ttl - 1; }
    action drop() { mark_to_drop(sm); }
    apply { if (h.ip.isValid()) { next_hop((bit<9>)h.ip.tos); } else { drop(); } }"""),
        {"I.next_hop": [], "I.drop": []}, id="source-routing-no-tables"),
    # a call in a branch a constant condition never takes is dead code p4c removes
    pytest.param(ingress("""
    action dead() { h.ip.tos = 1; }
    action live() { h.ip.tos = 2; }
    apply { if (true) { live(); } else { dead(); } }"""),
        {"I.live": []}, id="dead-branch-call-removed"),
    # an action a table refers to and apply also calls: listed, with its parameters
    pytest.param(ingress("""
    action set_port(bit<9> port) { sm.egress_spec = port; }
    table ports { key = { h.ip.dst : exact; } actions = { set_port; } default_action = set_port(1); }
    apply { set_port(2); ports.apply(); }"""),
        {"I.set_port": [(1, "port", 9)]}, id="table-action-also-called-directly"),
    # mri: a directed parameter bound in the actions list is not action data
    pytest.param(ingress("""
    action add_hop(inout bit<8> hops, bit<32> swid) { hops = hops + 1; m.result = swid; }
    table trace { actions = { add_hop(m.hops); } default_action = add_hop(m.hops, 0); }
    apply { trace.apply(); }"""),
        {"I.add_hop": [(1, "swid", 32)]}, id="mri-directed-param-bound"),
    # @hidden: the table is left out, its actions are not; an @hidden action is left out
    pytest.param(ingress("""
    action set_port(bit<9> port) { sm.egress_spec = port; }
    @hidden action quiet() { }
    @hidden table internal { actions = { set_port; quiet; } default_action = quiet(); }
    apply { internal.apply(); }"""),
        {"I.set_port": [(1, "port", 9)]}, id="hidden-table-hidden-action"),
]


@pytest.mark.parametrize("ingress_text, expected", CASES)
def test_p4info_actions_as_p4c_lists_them(ingress_text: str, expected: dict) -> None:
    info = build_p4info(load_program_text(HEAD + ingress_text + EMPTY_EGRESS + TAIL, "tut.p4"))
    got = {a.preamble.name: [(p.id, p.name, p.bitwidth) for p in a.params] for a in info.actions}
    assert got == expected
    # every action a listed table refers to is listed, and nothing else is referred to
    listed = {a.preamble.id for a in info.actions}
    assert {r.id for t in info.tables for r in t.action_refs} <= listed


def test_actions_of_two_instances_of_a_control() -> None:
    """A control applied twice: each instance's table refers to its own copy of the action."""
    text = HEAD + """
control Stage(inout headers_t h, inout standard_metadata_t sm) {
    action set_port(bit<9> port) { sm.egress_spec = port; }
    table ports { key = { h.ip.dst : exact; } actions = { set_port; } default_action = set_port(0); }
    apply { ports.apply(); }
}
""" + ingress("""
    Stage() first;
    Stage() second;
    apply { first.apply(h, sm); second.apply(h, sm); }""") + EMPTY_EGRESS + TAIL
    info = build_p4info(load_program_text(text, "two.p4"))
    assert {a.preamble.name for a in info.actions} == {"I.first.set_port", "I.second.set_port"}
    assert {t.preamble.name for t in info.tables} == {"I.first.ports", "I.second.ports"}


def test_one_control_plane_name_for_two_actions_is_refused_for_p4info() -> None:
    """p4c-bm2-ss accepts the program, but not with --p4runtime-files (its
    DuplicateActionControlPlaneNameCheck); ``check`` accepts it, ``compile`` does not.
    (The two actions are in two tables: in one table p4c-bm2-ss refuses them even without
    P4Info, test_p4info_duplicate_names.py.)"""
    text = HEAD + ingress("""
    @name(".set") action set_a(bit<9> port) { sm.egress_spec = port; }
    @name(".set") action set_b(bit<9> port) { sm.egress_spec = port + 1; }
    table t { key = { h.ip.dst : exact; } actions = { set_a; } }
    table t2 { key = { h.ip.dst : exact; } actions = { set_b; } }
    apply { t.apply(); t2.apply(); }""") + EMPTY_EGRESS + TAIL
    prog = load_program_text(text, "dup.p4")
    with pytest.raises(P4Error) as info:
        build_p4info(prog)
    assert str(info.value).endswith("error: .set: conflicting control plane name: .set")
    assert info.value.loc is not None and info.value.loc.line == text.count("\n", 0, text.index("action set_b")) + 1


# Issue 35, second corpus (behavioral-model's simple_switch_grpc test programs, onos's
# flowstats): an action or table named at the top level with ``@name(".x")`` is still its
# control's own, so the front end's NoAction copy (prepended by LocalizeAllActions) comes
# first; a register of int<W> is a signed bitstring. p4c-bm2-ss 1.2.5.16 wrote: actions
# NoAction, send, I.other; the register's type_spec ``bitstring { int { bitwidth: 32 } }``.
TOP_NAMED = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; bit<8> g; }
struct H { h_t h; }
struct M { int<32> s; }
parser P(packet_in b, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { b.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    register<int<32>>(16) sums;
    @name(".send") action send(bit<9> port) { sm.egress_spec = port; }
    action other() { hdr.h.g = 1; }
    @name(".fwd") table fwd {
        key = { hdr.h.f: exact; }
        actions = { send; other; }
    }
    apply { fwd.apply(); sums.read(m.s, 0); m.s = m.s + 1; sums.write(0, m.s); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out b, in H hdr) { apply { b.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_top_level_named_action_stays_its_controls_and_int_register_is_signed() -> None:
    info = build_p4info(load_program_text(TOP_NAMED, "top_named.p4"))
    assert [a.preamble.name for a in info.actions] == ["NoAction", "send", "I.other"]
    (reg,) = info.registers
    assert reg.type_spec.bitstring.HasField("int") and not reg.type_spec.bitstring.HasField("bit")
    assert reg.type_spec.bitstring.int.bitwidth == 32


# issue 35, third corpus (comp536's ecmp_net.p4, CS216Project's sample-8bit.p4); the lists
# are what p4c-bm2-ss 1.2.5.16 wrote for these programs (measured)
DIRECT_CALLED = HEAD + """
action bump(in bit<8> x, out bit<8> y) { y = x + 1; }
action top_tbl(bit<8> v) { }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> v) { h.ip.tos = v; }
    action fwd(bit<9> p) { sm.egress_spec = p; }
    table t { key = { h.ip.tos : exact; } actions = { set; fwd; top_tbl; } default_action = set(2); }
    apply { INGRESS_CALL t.apply(); }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action e_own() { h.ip.ttl = 0; }
    table te { key = { h.ip.ttl : exact; } actions = { e_own; } }
    apply { te.apply(); EGRESS_CALL }
}
""" + TAIL


@pytest.mark.parametrize("ingress_call, egress_call, expected", [
    pytest.param("", "bump(h.ip.tos, h.ip.ttl);",
                 ["top_tbl", "I.set", "I.fwd", "NoAction", "bump", "E.e_own"], id="called-from-egress"),
    pytest.param("bump(h.ip.tos, h.ip.ttl);", "",
                 ["top_tbl", "bump", "I.set", "I.fwd", "NoAction", "E.e_own"], id="called-from-ingress"),
])
def test_top_level_action_only_called_directly_is_its_callers(ingress_call: str, egress_call: str,
                                                               expected: list[str]) -> None:
    text = DIRECT_CALLED.replace("INGRESS_CALL", ingress_call).replace("EGRESS_CALL", egress_call)
    info = build_p4info(load_program_text(text, "direct_called.p4"))
    assert [a.preamble.name for a in info.actions] == expected


def test_empty_entries_list_has_no_initial_entries() -> None:
    text = HEAD + ingress("""
    action set(bit<8> v) { h.ip.tos = v; }
    table t_const_empty { key = { h.ip.tos : exact; } actions = { set; } const entries = { } default_action = set(1); }
    table t_empty { key = { h.ip.tos : exact; } actions = { set; } entries = { } default_action = set(2); }
    table t_full { key = { h.ip.tos : exact; } actions = { set; } const entries = { 5 : set(6); } default_action = set(3); }
    apply { t_const_empty.apply(); t_empty.apply(); t_full.apply(); }""") + EMPTY_EGRESS + TAIL
    info = build_p4info(load_program_text(text, "empty_entries.p4"))
    flags = {t.preamble.name: (t.is_const_table, t.has_initial_entries) for t in info.tables}
    assert flags == {"I.t_const_empty": (True, False), "I.t_empty": (False, False), "I.t_full": (True, True)}
