"""Pins p4sim's STF reader to the grammar of p4c's BMv2 STF runner (``tools/stf`` lexer
and parser plus ``backends/bmv2/bmv2stf.py``): every form that runner accepts parses
here; every form it refuses (a parse error, a runner exception, or a command
simple_switch_CLI rejects) is refused with ``file:line:col: error: ...``. Also pins the
order in which BMv2 processes packets under that runner, and that the project's own STF
files are in the grammar and can still fail.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4sim.stf import StfError, parse_stf, release_points, run_stf, run_stf_text
from test_stf_format import Program

STF_ROOT = Path(__file__).parent / "stf"
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", [
    "add t 10 h.f:0x0a a(p:1) = E1",
    "add t h.f:1 a()",
    "add MyIngress.t hdr.h.k:0b1*0 hdr.h.j:0x0A** a(x:1,y:0x2, z:0b11)",
    "add t s[0].f:1 a()",
    "add t hdr.s$0.f:1 hdr.h.$valid$:1 a()",
    'add "My.t" "odd-name":1 "a.b"()',
    "add t\n  k:1\n  a(p:1)",
    "ADD t k : 1 a ( p : 1 )",
    "setdefault t a(p:1)",
    "setdefault MyIngress.t MyIngress.a()",
    "packet 0 0a0b",
    "PACKET 1 0A 0b 12",
    "expect 1",
    "expect 1 0a**",
    "expect 1 0a $",
    "expect 1 $",
    "expect 10 *",
    "check_counter c(0)",
    "check_counter c($A) bytes <= 0x10",
    'check_counter "MyIngress.c"(1) packets != 2',
    "check_counter c(0b1) packets > 1",
    "mirroring_add 1 2", "mirroring_add_mc 1 2", "mirroring_delete 1", "mirroring_get 1",
    "mc_mgrp_create 1", "mc_node_create 0 1 2", "mc_node_associate 1 0",
    "counter_read c 1", "counter_write MyIngress.c 1 2 3", "register_read r 1",
    "register_write r 1 2", "register_reset r", "meter_get_rates m 1",
    "meter_set_rates m 1 0.5:10 1:20", "meter_array_set_rates m 0.000005:4 0.00002:5",
    "wait", "remove\nall", "# only a comment", "", "wait # trailing comment\n\n\twait",
])
def test_accepted_forms_parse(text: str) -> None:
    parse_stf(text, "ok.stf")


@pytest.mark.parametrize("text, message", [
    ("add t k:0x0a000000/8 a()", "x.stf:1:19: error: 'VALUE/LEN' keys are not STF"),
    ("add t k:0x0a&&&0xff a()", "x.stf:1:13: error: illegal character '&': ternary VALUE&&&MASK"),
    ("add t k:10.0.0.1 a()", "x.stf:1:11: error: expected a name, found '.'; dotted addresses"),
    ("add t k:00:00:00:00:00:01 a()", "x.stf:1:11: error: expected a name, found ':'"),
    ("add t k:0o17 a()", "'0o17' is not a number of p4c's STF lexer"),
    ("add t k:2->4 a()", "x.stf:1:10: error: illegal character '-': ranges"),
    ("add t a()", "x.stf:1:7: error: 'add' needs at least one KEY:VALUE before the action"),
    ("add t k:1 a(p)", "x.stf:1:14: error: expected ':', found ')'"),
    ("add t k:1 a(p:1,)", "x.stf:1:17: error: expected an action argument NAME:VALUE"),
    ("add t k:1 a(p.q:1)", "x.stf:1:14: error: expected ':', found '.'"),
    ("add t 0x10 k:1 a()", "x.stf:1:7: error: expected a name, found '0x10'"),
    ("add t hdr.s[0].f:1 a()", "x.stf:1:12: error: expected ':' (KEY:VALUE) or '(' (the action), "
                               "found '['; a stack index is only allowed on a name's first part"),
    ("add t k:1 a() = 5", "x.stf:1:17: error: expected a name, found '5'"),
    ("add t packets:1 a()", "x.stf:1:7: error: expected a name, found 'packets'; 'packets' is a keyword"),
    ("add t k:1 a() add t k:2 a()", "x.stf:1:15: error: 'add' does not start a line"),
    ("packet 0", "x.stf:1:9: error: unexpected end of file: 'packet' needs data"),
    ("packet 0\nwait", "x.stf:2:1: error: 'packet' needs data"),
    ("packet 0 0a # c", "x.stf:1:13: error: invalid packet data '#': p4c's STF lexer allows no comment"),
    ("packet 0 0a*", "x.stf:1:12: error: unexpected '*' in packet data"),
    ("packet 0 0a0", "x.stf:1:1: error: packet data has an odd number of hex digits (3)"),
    ("packet 0 0a\r\n", "x.stf:1:12: error: invalid packet data '\\r': carriage return"),
    ("expect 1 0a $ 0b", "x.stf:1:15: error: unexpected '0' in expect data"),
    ("expect 1 0a $$", "x.stf:1:14: error: unexpected '$' in expect data"),
    ("expect a 00", "x.stf:1:8: error: expected a port number, found 'a'"),
    ("expect 0x1 00", "x.stf:1:9: error: invalid packet data 'x'"),
    ("no_packet", "x.stf:1:1: error: 'no_packet' is not usable"),
    ("remove all", "x.stf:1:8: error: expected 'all' at the start of a line"),
    ("mc_node_update 0 1", "x.stf:1:1: error: 'mc_node_update' is parsed but never sent"),
    ("mc_mgrp_destroy 1", "x.stf:1:1: error: unknown STF command 'mc_mgrp_destroy'"),
    ("counter_reset c", "x.stf:1:1: error: unknown STF command 'counter_reset'"),
    ("mc_node_create 0", "unexpected end of file: expected a number"),
    ("mirroring_add 0x5 1", "x.stf:1:15: error: mirroring_add's argument must be decimal"),
    ("mirroring_add 5", "x.stf:1:16: error: unexpected end of file: expected a number"),
    ("register_write r 1 0x7f", "x.stf:1:20: error: register_write's argument must be decimal"),
    ("meter_set_rates m 1 0x1:2 1:2", "x.stf:1:21: error: a meter rate must be decimal"),
    ("check_counter MyIngress.c(1)", "x.stf:1:24: error: check_counter takes a plain name"),
    ("check_counter c(1) packets = 2", "x.stf:1:28: error: expected ==, !=, <, <=, > or >="),
    ("check_counter c(1) packets == 0x1*", "x.stf:1:31: error: a counter value has no * digits"),
    ("frobnicate 1", "x.stf:1:1: error: unknown STF command 'frobnicate'"),
    ("5 wait", "x.stf:1:1: error: unexpected '5': expected a command"),
    ("setdefault t a", "unexpected end of file: expected '('"),
])
def test_refused_forms_are_located(text: str, message: str) -> None:
    with pytest.raises(StfError) as info:
        parse_stf(text, "x.stf")
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize("kind, text, message", [
    ("exact", "add t k:0x1* hdr.h:1 fwd(port:1)", "e.stf:1:9: error: bad value '0x1*' for key hdr.h.k"),
    ("exact", "add t k:010 hdr.h:1 fwd(port:1)", "e.stf:1:9: error: bad value '010'"),
    ("exact", "add t k:1 hdr.h:1 fwd(port:0x*)", "e.stf:1:28: error: bad value '0x*' for action argument port"),
    ("exact", "add t k:1 hdr.h:1 fwd(port:1, q:2)", "e.stf:1:33: error: unexpected action argument 'q'"),
    ("exact", "add t k:1 hdr.h:1 fwd()", "e.stf:1:1: error: missing action argument(s) port"),
    ("exact", "add nope k:1 fwd(port:1)", "e.stf:1:1: error: no table 'nope'"),
    ("exact", "add t zz:1 fwd(port:1)", "e.stf:1:10: error: unexpected key field 'zz'"),
    ("ternary", "add t 1 k:5 hdr.h:1 fwd(port:1)", "e.stf:1:11: error: value '5' not supported for a ternary key"),
    ("ternary", "add t k:0x05 hdr.h:1 fwd(port:1)", "e.stf:1:1: error: table MyIngress.t has ternary/optional keys"),
    ("lpm", "add t k:10 hdr.h:1 fwd(port:1)", "e.stf:1:9: error: value '10' not supported for an lpm key"),
    ("lpm", "add t k:0x1FF hdr.h:1 fwd(port:1)", "e.stf:1:9: error: lpm value '0x1FF' does not fit in 8 bits"),
    ("optional", "add t 1 k:0x0* hdr.h:1 fwd(port:1)", "e.stf:1:11: error: optional key hdr.h.k: a partial mask"),
    ("range", "add t 1 k:0x05 hdr.h:1 fwd(port:1)", "e.stf:1:1: error: table MyIngress.t has a range key"),
    ("exact", "counter_write c 0 1 1", "e.stf:1:1: error: counter_write needs the full name 'MyIngress.c'"),
    ("exact", "check_counter c(x)", "e.stf:1:17: error: check_counter index 'x'"),
    ("exact", "check_counter c($E)", "e.stf:1:17: error: check_counter: no entry was added with '= E'"),
    ("exact", "register_read MyIngress.rr 0", "e.stf:1:1: error: no register 'MyIngress.rr'"),
])
def test_refused_values_are_located(kind: str, text: str, message: str) -> None:
    result = run_stf_text(Program(kind), text + "\n", "e.stf")
    assert not result.passed
    assert message in result.failures[0], result.failures[0]


def test_optional_key_reads_as_ternary() -> None:
    """BMv2's JSON makes an optional key ternary: 0x05 is the whole field, 0x** none."""
    prog = Program("optional")
    res = run_stf_text(prog, "add t 2 k:0x05 hdr.h:1 fwd(port:5)\nadd t 1 k:0x** hdr.h:1 fwd(port:3)\n"
                             "packet 0 05 00\nexpect 5 05 05\npacket 0 06 00\nexpect 3 06 03\n")
    assert res.passed, res.report()


# ----------------------------------------------------------------------------- timing
def test_release_points_follow_the_pcap_reader() -> None:
    cmds = parse_stf("packet 0 00\nsetdefault t a()\npacket 6 00\nsetdefault t b()\n"
                     "packet 0 00\nexpect 6\nexpect 0\n")
    # packet@0 waits for port 6's next packet (index 2); packet@2 for port 0's (index 4);
    # packet@4 for the end (port 6 has no later packet)
    assert release_points(cmds) == [2, 1, 4, 3, 7, 5, 6]
    single = parse_stf("packet 0 00\nsetdefault t a()\npacket 0 00\nexpect 0\nexpect 0\n")
    assert release_points(single) == [0, 1, 2, 3, 4]     # one port: no waiting


def test_packets_see_later_commands_as_on_bmv2() -> None:
    """BMv2 under p4c's runner emits both packets on port 4: port 4 has no input, so its
    fifo closes at the end and no packet is processed before then."""
    text = "packet 0 01 00\nsetdefault t fwd(port:4)\npacket 0 02 00\nexpect 4 01 04\nexpect 4 02 04\n"
    res = run_stf_text(Program(), text)
    assert res.passed, res.report()
    # a packet on the output port written before the setdefault releases the first one
    text = ("packet 0 01 00\npacket 4 03 00\nsetdefault t fwd(port:4)\npacket 0 02 00\n"
            "expect 0 01 00\nexpect 4 03 04\nexpect 4 02 04\n")
    res = run_stf_text(Program(), text)
    assert res.passed, res.report()


def test_check_counter_waits_for_the_packets_before_it() -> None:
    text = ("packet 0 01 00\nexpect 0\ncheck_counter c(1) packets == 1\npacket 0 05 00\n"
            "expect 0\ncheck_counter c(1) packets == 2\n")
    assert run_stf_text(Program(), text).passed
    text = ("packet 0 01 00\nexpect 9\ncheck_counter c(1) packets == 1\npacket 0 05 00\n"
            "expect 0\nexpect 0\ncheck_counter c(1) packets == 2\n")
    res = run_stf_text(Program(), text)      # port 9: both released at the end
    assert res.failures == ["port 9: expected packet #0 (line 2) not received\n"
                            "    expected: (any content)",
                            "port 9: expected 1 packet(s), received 0"]


# ----------------------------------------------------------------------------- project files
def _project_stf_files() -> list[Path]:
    return sorted(p for p in REPO.rglob("*.stf*")
                  if ".venv" not in p.parts and p.suffix in (".stf", ".stfq"))


@pytest.mark.parametrize("path", _project_stf_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_project_stf_files_are_in_the_grammar(path: Path) -> None:
    parse_stf(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.parametrize("name", ["tables/lpm_longest_prefix", "tables/setdefault_stf",
                                  "lang/table_hit_miss", "fabric/routing"])
def test_converted_files_can_fail(name: str, tmp_path: Path) -> None:
    """Changing one expected byte of a converted file makes it fail."""
    stf = STF_ROOT / f"{name}.stf"
    text = stf.read_text(encoding="utf-8")
    program = stf.with_suffix(".p4")
    assert run_stf(str(program), str(stf), [str(stf.parent)]).passed
    line = next(m for m in re.finditer(r"^expect \d+ ([0-9A-Fa-f]{2})", text, re.M))
    flipped = "00" if line.group(1) != "00" else "11"
    broken = tmp_path / stf.name
    broken.write_text(text[:line.start(1)] + flipped + text[line.end(1):], encoding="utf-8")
    result = run_stf(str(program), str(broken), [str(stf.parent)])
    assert not result.passed and "differs at nibble" in result.report()
