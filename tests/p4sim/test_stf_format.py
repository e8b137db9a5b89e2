"""Tests of the STF runner (:mod:`p4sim.stf`, :mod:`p4sim.v1model.stf_commands`): parsing
of every command form, expectation matching (``*`` wildcards, trailing ``$``), per-port
checking, table-entry translation (names, key kinds, priorities) and error messages.

A tiny fake program with real runtime tables and a real replication engine stands in for
a compiled P4 program: header ``h`` = ``k`` (8 bits) + ``v`` (8 bits); table
``MyIngress.t`` keyed on ``hdr.h.k`` runs ``MyIngress.fwd(port)``, which also writes
``v`` = the port.
"""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from p4sim.engine.context import CloneRequest, PacketContext
from p4sim.runtime.counters import CounterArray
from p4sim.runtime.pre import PacketReplicationEngine
from p4sim.runtime.registers import RegisterArray
from p4sim.runtime.tables import ActionCall, ActionSpec, Exact, KeyField, Lpm, Table, Ternary
from p4sim.stf import (Expectation, StfError, check_outputs, compare_frame, parse_stf,
                       run_stf_text)
from p4sim.v1model.stf_commands import (cli_int, lpm_value, resolve_cli_name, resolve_key,
                                        resolve_name, ternary_value)


# --------------------------------------------------------------------------- fake program
class Std(SimpleNamespace):
    pass


STD = ("ingress_port egress_spec egress_port instance_type packet_length enq_timestamp "
       "enq_qdepth deq_timedelta deq_qdepth ingress_global_timestamp egress_global_timestamp "
       "mcast_grp egress_rid checksum_error parser_error priority").split()


class Program:
    """One table; its kind is chosen per test."""

    def __init__(self, kind: str = "exact", clone_session: int = 0, mcast: bool = False) -> None:
        actions = [ActionSpec("MyIngress.fwd", [("port", 9)]), ActionSpec("NoAction")]
        self.table = Table("MyIngress.t", [KeyField("hdr.h.k", kind, 8),
                                           KeyField("hdr.h.$valid$", "exact", 1)],
                           actions, default_action=("NoAction", ()))
        self.clone_session = clone_session
        self.mcast = mcast
        self.state = SimpleNamespace(
            tables={"MyIngress.t": self.table}, pre=PacketReplicationEngine(),
            digests=None, counters={"MyIngress.c": CounterArray("MyIngress.c", 4)},
            registers={"MyIngress.r": RegisterArray("MyIngress.r", 4, 8)}, meters={})

    def new_packet(self) -> Any:
        return SimpleNamespace(hdr=SimpleNamespace(valid=False, k=0, v=0),
                               meta=SimpleNamespace(), std=Std(**{f: 0 for f in STD}))

    def copy_packet(self, pv: Any) -> Any:
        return copy.deepcopy(pv)

    def invalidate_headers(self, hdr: Any) -> None:
        hdr.valid = False

    def copy_headers(self, dst: Any, src: Any) -> None:
        dst.valid = src.valid
        if src.valid:
            dst.k, dst.v = src.k, src.v

    def preserve_field_list(self, index: int, src: Any, dst: Any) -> None:
        return None

    def parser(self, ctx: PacketContext, pv: Any) -> None:
        if ctx.remaining_bytes() >= 2:
            pv.hdr.valid, pv.hdr.k, pv.hdr.v = True, ctx.data[0], ctx.data[1]
            ctx.offset_bits = 16

    def verify_checksum(self, ctx: PacketContext, pv: Any) -> None:
        return None

    def ingress(self, ctx: PacketContext, pv: Any) -> None:
        res = self.table.apply((pv.hdr.k, int(pv.hdr.valid)))
        if res.action_name == "MyIngress.fwd":
            pv.std.egress_spec = res.action_args[0]
            pv.hdr.v = res.action_args[0]
        self.state.counters["MyIngress.c"].count(pv.hdr.k & 3, len(ctx.data))
        if self.clone_session:
            ctx.clone = CloneRequest("I2E", self.clone_session)
        if self.mcast:
            pv.std.mcast_grp = 1

    def egress(self, ctx: PacketContext, pv: Any) -> None:
        return None

    def compute_checksum(self, ctx: PacketContext, pv: Any) -> None:
        return None

    def deparser(self, ctx: PacketContext, pv: Any) -> None:
        if pv.hdr.valid:
            ctx.emitted += bytes([pv.hdr.k, pv.hdr.v])


# --------------------------------------------------------------------------- parsing
# (every form of the grammar, accepted and refused: test_stf_grammar.py)
def test_parse_packet_and_expect_forms() -> None:
    cmds = parse_stf("""
        # comment
        packet 0 01 02 0304
        expect 1 01 ** 03 04 $
        expect 2 0a0B
        expect 3
        wait
        PACKET 4 ff
    """, "x.stf")
    assert [c.name for c in cmds] == ["packet", "expect", "expect", "expect", "wait", "packet"]
    assert cmds[0].args == {"port": 0, "data": bytes.fromhex("01020304")}
    assert cmds[1].args == {"port": 1, "pattern": "01**0304", "exact": True}
    assert cmds[2].args == {"port": 2, "pattern": "0A0B", "exact": False}
    assert cmds[3].args == {"port": 3, "pattern": None, "exact": False}
    assert cmds[1].line == 4


def test_parse_add_forms() -> None:
    add = parse_stf("add MyIngress.t 12 hdr.h.k:0x1* hdr.h.$valid$:1 "
                    "MyIngress.fwd(port:3, x: 0x4) = ENTRY\n")[0]
    assert add.args == {"table": "MyIngress.t", "priority": 12,
                        "keys": [("hdr.h.k", "0x1*"), ("hdr.h.$valid$", "1")],
                        "action": "MyIngress.fwd", "action_args": [("port", "3"), ("x", "0x4")],
                        "handle": "ENTRY"}
    plain = parse_stf("add t k:0b1*0 a()")[0]
    assert (plain.args["priority"], plain.args["keys"], plain.args["action_args"]) == (
        None, [("k", "0b1*0")], [])
    spaced = parse_stf("add t k : 5 a(p:1)")[0]
    assert spaced.args["keys"] == [("k", "5")]


def test_parse_other_commands() -> None:
    cmds = parse_stf("""setdefault t drop()
mirroring_add 5 3
mirroring_add_mc 6 2
mc_mgrp_create 1
mc_node_create 0 1 2 3
mc_node_associate 1 0
register_write MyIngress.r 1 7
check_counter c(2) bytes >= 10
check_counter c($E)
""")
    assert cmds[0].args == {"table": "t", "action": "drop", "action_args": []}
    assert cmds[1].args == {"ints": [5, 3], "list": []}
    assert cmds[4].args == {"ints": [0], "list": [1, 2, 3]}
    assert cmds[6].args == {"extern": "MyIngress.r", "words": ["1", "7"]}
    assert cmds[7].args == {"counter": "c", "index": "2", "kind": "bytes", "op": ">=", "value": 10}
    assert cmds[8].args["index"] == "$E" and cmds[8].args["op"] == "=="


def test_cli_int_forms() -> None:
    assert [cli_int(t) for t in ("10", "0", "0x1F", "0b11")] == [10, 0, 31, 3]
    for bad in ("010", "0x1*", "0b1*"):
        with pytest.raises(StfError, match="simple_switch_CLI reads it with int"):
            cli_int(bad)


# --------------------------------------------------------------------------- matching
def test_compare_frame_wildcards_and_length() -> None:
    assert compare_frame("01**03", bytes.fromhex("01ff03")) is None
    assert compare_frame("01**03", bytes.fromhex("01ff0304")) is None        # longer is fine
    assert "too long" in compare_frame("01**03", bytes.fromhex("01ff0304"), exact=True)
    assert "too short" in compare_frame("01**0304", bytes.fromhex("01ff03"))
    assert compare_frame("0*", b"\x0f") is None
    assert compare_frame("0A", b"\x0b") == "differs at nibble 1 (byte 0): expected A, received B"


def test_check_outputs_rules() -> None:
    exp = {1: [Expectation(1, "01", line=1), Expectation(1, "02", line=2)],
           2: [Expectation(2, None)]}
    assert check_outputs(exp, {1: [b"\x01", b"\x02"], 2: [b"\x00"]}) == []
    # 'expect PORT' without data is one packet of any content (bmv2stf appends None)
    two = check_outputs(exp, {1: [b"\x01", b"\x02"], 2: [b"\x00", b"\x00"]})
    assert two == ["port 2: unexpected extra packet #1\n    received: 00",
                   "port 2: expected 1 packet(s), received 2"]
    missing = check_outputs(exp, {1: [b"\x01"]})
    assert any("expected packet #1 (line 2) not received" in f for f in missing)
    stray = check_outputs(exp, {1: [b"\x01", b"\x02"], 2: [b"\x07"], 5: [b"\x00"]})
    assert stray == ["port 5: 1 packet(s) received but no expectation "
                     "(packets with no expectation must not appear)"]
    wrong = check_outputs({1: [Expectation(1, "0102", line=3)]}, {1: [b"\x01\x03"]})
    assert "packet #0 (line 3) differs at nibble 3" in wrong[0]
    assert "expected: 0102\n    received: 0103\n                 ^" in wrong[0]


# --------------------------------------------------------------------------- key values
def test_key_value_translation() -> None:
    assert ternary_value("0x0A", 16) == (0x0A, 0xFF)           # mask only the written digits
    assert ternary_value("0x*1", 8) == (0x01, 0x0F)
    assert ternary_value("0b1*0", 3) == (0b100, 0b101)
    for bad in ("10", "0X0A"):                                  # bmv2stf's makeMask refuses
        with pytest.raises(StfError, match="only 0x... or 0b..."):
            ternary_value(bad, 8)
    with pytest.raises(StfError, match="does not fit in 8 bits"):
        ternary_value("0x1FF", 8)
    assert lpm_value("0x0A******", 32) == (0x0A000000, 8)
    assert lpm_value("0x0A00****", 32) == (0x0A000000, 16)
    assert lpm_value("0b0000101*", 8) == (0x0A, 7)
    with pytest.raises(StfError, match="only 0x... or 0b..."):
        lpm_value("10", 8)                                      # makeLpm mangles decimals


def test_name_resolution() -> None:
    assert resolve_name(["MyIngress.t", "MyEgress.t"], "MyEgress.t", "table") == "MyEgress.t"
    with pytest.raises(StfError, match="ambiguous"):
        resolve_name(["MyIngress.t", "MyEgress.t"], "t", "table")
    # bmv2stf compares plain string suffixes: 't' is ambiguous between 't' and 'tt'
    with pytest.raises(StfError, match="ambiguous"):
        resolve_name(["MyIngress.t", "MyIngress.tt"], "t", "table")
    assert resolve_cli_name(["MyIngress.c", "MyIngress.cc"], "c", "counter") == "MyIngress.c"
    with pytest.raises(StfError, match="no counter 'gress.c'"):
        resolve_cli_name(["MyIngress.c"], "gress.c", "counter")
    with pytest.raises(StfError, match="no table 'x'"):
        resolve_name(["MyIngress.t"], "x", "table")
    keys = ["hdr.h.k", "hdr.h.$valid$", "meta.m[1].f"]
    assert resolve_key(keys, "k") == "hdr.h.k"
    assert resolve_key(keys, "hdr.h.valid") == "hdr.h.$valid$"
    assert resolve_key(keys, "meta.m$1.f") == "meta.m[1].f"
    with pytest.raises(StfError, match="unexpected key field 'zz'"):
        resolve_key(keys, "zz")


# --------------------------------------------------------------------------- running
def test_run_exact_table_and_expectations() -> None:
    prog = Program()
    res = run_stf_text(prog, """
add t k:0x05 hdr.h.$valid$:1 fwd(port:3)
packet 0 05 00 aa
expect 3 05 03 aa $
packet 0 06 00
expect 0 06 00
""", "ok.stf")
    assert res.passed, res.report()
    assert prog.table.entries()[0].matches == (Exact(5), Exact(1))


def test_run_reports_mismatch_and_missing_packet() -> None:
    res = run_stf_text(Program(), "packet 0 01 00\nexpect 0 01 01\nexpect 4 00\n", "bad.stf")
    assert not res.passed
    text = res.report()
    assert "port 0: packet #0 (line 2) differs at nibble 3" in text
    assert "port 4: expected packet #0 (line 3) not received" in text


def test_ternary_priorities_higher_stf_number_wins() -> None:
    prog = Program("ternary")
    res = run_stf_text(prog, """
add t 1 k:0x0* valid:1 fwd(port:1)
add t 5 k:0x05 valid:1 fwd(port:5)
add t 3 k:0x** valid:1 fwd(port:3)
packet 0 05 00
expect 5 05 05
packet 0 07 00
expect 3 07 03
packet 0 17 00
expect 3 17 03
""")
    assert res.passed, res.report()
    assert [e.priority for e in prog.table.entries()] == [2, 6, 4]
    assert prog.table.entries()[0].matches[0] == Ternary(0x00, 0xF0)
    assert prog.table.entries()[0].matches[1] == Exact(1)


def test_lpm_and_range_and_missing_keys() -> None:
    lpm = Program("lpm")
    assert run_stf_text(lpm, "add t k:0x0* hdr.h:1 fwd(port:2)\npacket 0 03 00\nexpect 2 03 02\n").passed
    assert lpm.table.entries()[0].matches[0] == Lpm(0, 4)
    # a key left out: lpm 0/0; an exact key left out is 0
    lpm2 = Program("lpm")
    assert run_stf_text(lpm2, "add t hdr.h:1 fwd(port:2)\npacket 0 03 00\nexpect 2 03 02\n").passed
    assert lpm2.table.entries()[0].matches == (Lpm(0, 0), Exact(1))
    # bmv2stf cannot build a key for a table with a range key
    res = run_stf_text(Program("range"), "add t 1 k:2 hdr.h:1 fwd(port:7)\n", "r.stf")
    assert res.failures == ["r.stf:1:1: error: table MyIngress.t has a range key (hdr.h.k): "
                            "p4c's BMv2 runner cannot program range keys"]
    # a ternary table needs a priority (bmv2stf appends it to table_add)
    res = run_stf_text(Program("ternary"), "add t k:0x05 fwd(port:7)\n", "p.stf")
    assert "p.stf:1:1: error: table MyIngress.t has ternary/optional keys" in res.failures[0]


def test_setdefault_and_action_errors() -> None:
    prog = Program()
    assert run_stf_text(prog, "setdefault t fwd(port:4)\npacket 0 01 00\nexpect 4 01 04\n").passed
    assert prog.table.default_action == ActionCall("MyIngress.fwd", (4,))
    bad = run_stf_text(Program(), "add t k:1 fwd(prt:4)\n", "e.stf")
    assert bad.failures == ["e.stf:1:19: error: unexpected action argument 'prt' for "
                            "MyIngress.fwd (parameters: port)"]
    missing = run_stf_text(Program(), "add t k:1 fwd()\n", "e.stf")
    assert "missing action argument(s) port" in missing.failures[0]
    wide = run_stf_text(Program(), "add t k:1 fwd(port:0x400)\n", "e.stf")
    assert "OUT_OF_RANGE" in wide.failures[0]
    table = run_stf_text(Program(), "add nope k:1 fwd(port:1)\n", "e.stf")
    assert "no table 'nope'" in table.failures[0]


def test_multicast_and_mirroring_commands() -> None:
    prog = Program(clone_session=5, mcast=True)
    res = run_stf_text(prog, """
mc_mgrp_create 1
mc_node_create 7 2 3
mc_node_associate 1 0
mirroring_add 5 9
packet 0 01 00
expect 9 01 00
expect 2 01 00
expect 3 01 00
""")
    assert res.passed, res.report()
    assert prog.state.pre.replicate(1) == [(2, 7), (3, 7)]


def test_stray_packet_on_unexpected_port_fails() -> None:
    res = run_stf_text(Program(), "add t k:1 hdr.h.$valid$:1 fwd(port:6)\npacket 0 01 00\n")
    assert not res.passed
    assert "port 6: 1 packet(s) received but no expectation" in res.report()



def test_register_and_counter_commands() -> None:
    prog = Program()
    res = run_stf_text(prog, """
register_write MyIngress.r 2 127
register_read r 2
packet 0 01 00
packet 0 05 00
expect 0
expect 0
check_counter c(1) packets == 2
check_counter c(1) bytes == 4
check_counter c(0)
counter_read MyIngress.c 1
""", "c.stf")
    assert res.passed, res.report()
    assert prog.state.registers["MyIngress.r"].get(2) == 0x7F
    assert "c.stf:3: MyIngress.r[2] = 127" in res.notes
    failing = run_stf_text(Program(), "packet 0 01 00\nexpect 0\ncheck_counter c(1) packets > 5\n")
    assert failing.failures == ["check_counter MyIngress.c(1): packets is 1, expected > 5"]


# --------------------------------------------------------------------------- command line
@pytest.fixture
def fake_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    import p4sim.engine
    from p4sim.errors import P4Error

    def load_program(path: str, include_dirs: list[str]) -> Program:
        if path.endswith("bad.p4"):
            raise P4Error("syntax error")
        return Program()
    monkeypatch.setattr(p4sim.engine, "load_program", load_program, raising=False)


def test_cli_exit_codes(fake_loader: None, tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    from p4sim.__main__ import main

    good = tmp_path / "t.stf"
    good.write_text("packet 0 01 00\nexpect 0 01 00 $\n")
    bad = tmp_path / "u.stf"
    bad.write_text("packet 0 01 00\nexpect 0 01 01 $\n")
    assert main(["stf", "prog.p4", str(good)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["stf", "prog.p4", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "expected: 0101\n    received: 0100\n                 ^" in out
    assert main(["stf", "bad.p4", str(good)]) == 2
    assert "error: syntax error" in capsys.readouterr().err
    assert main(["stf", "prog.p4", str(tmp_path / "missing.stf")]) == 1


def test_cli_check_reports_syntax_errors(tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    from p4sim.__main__ import main

    bad = tmp_path / "bad.p4"
    bad.write_text("header h_t { bit<8> a }\n")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.p4:1:23: error:" in err and "^" in err


def test_packet_with_odd_nibble_count_is_refused() -> None:
    """bmv2stf's bytes.fromhex refuses an odd digit count and sends nothing."""
    with pytest.raises(StfError, match="odd.stf:1:1: error: packet data has an odd number"):
        parse_stf("packet 0 0a0b 2\n", "odd.stf")
