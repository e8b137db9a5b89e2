"""Every row of the measured BMv2 P4Runtime table (/work/shared/docs/bmv2-p4runtime.md:
simple_switch_grpc 1.15.5 + PI against p4sim, 351 probes) pinned against an in-process
p4sim server: one test per row, in the row's context, asserting BMv2's gRPC code, its
per-update ``p4.v1.Error`` codes and the read-back / stream event the row compares, or,
for the documented exceptions (``Row.exception``; p4sim/README.md "P4Runtime
conformance"), p4sim's documented answer.

The rows run in the table's order on one server per section group (fresh servers for
3c and 3d, as the probe did), lazily: a test runs every row before it that has not run
yet, so ``-k`` selections still see the right state. The pipeline rows (sections 0-3d)
run a second time with every config wrapped in PI's ``p4.tmp.P4DeviceConfig`` (the
table's "p4sim given BMv2's form of device config" section), expecting BMv2's answers.
The program is ``bmv2_probe.p4``, compiled with ``python -m p4sim compile``; the client
and the entity builders are in ``bmv2_probe_client.py``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from bmv2_probe_client import (BMV2_JSON, PAYLOAD, VALUE_SET_ID, Get, Outcome, Probe, Req, U, act,  # noqa: F401
                               call, compiled, ent, ex, ip, mac, port, te, text, texts, upd)
# ---------------------------------------------------------------- rows
@dataclass
class Row:
    """One row: what it sends (``run``) and BMv2's answer (``code``, ``updates``, a
    ``check`` of the outcome), or p4sim's documented answer when ``exception`` says why."""

    section: str
    label: str
    run: Callable[[Probe], Outcome]
    code: str = "OK"
    updates: tuple[str, ...] = ()
    check: Optional[Callable[[Outcome, Probe], Any]] = None
    exception: str = ""

    @property
    def id(self) -> str:
        return f"[{self.section}] {self.label}"


ROWS: list[Row] = []


def row(section: str, label: str, run: Callable[[Probe], Outcome], code: str = "OK",
        updates: tuple[str, ...] = (), check: Optional[Callable[[Outcome, Probe], Any]] = None,
        exception: str = "") -> None:
    ROWS.append(Row(section, label, run, code, updates, check, exception))


def is_texts(*want: str, ordered: bool = True) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:
        got = texts(out)
        if ordered:
            assert got == list(want)
        else:
            assert sorted(got) == sorted(want)
    return check


def count(n: int, first: Optional[str] = None) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:
        assert len(out.entities) == n
        if first is not None:
            assert text(out.entities[0]) == first
    return check


def fpc(p4info: Optional[bool], device_config: Optional[bool], cookie: Optional[int]
        ) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:
        assert out.value == (p4info, device_config, cookie)
    return check


def arbitration(status: str, eid: int, message: str) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:
        assert out.value == (status, 0, eid) and out.message.lower() == message
    return check


def fail_updates(n: int) -> tuple[str, ...]:
    return ("UNKNOWN",) * n


T_EXACT = 38514850
CONST_ENTRIES = (
    r'table_entry { table_id: 34073992 match { field_id: 1 exact { value: "\010\006" } } '
    r'action { action { action_id: 29586029 params { param_id: 1 value: "\001" } } } }',
    r'table_entry { table_id: 34073992 match { field_id: 1 exact { value: "\206\335" } } '
    r'action { action { action_id: 29586029 params { param_id: 1 value: "\002" } } } }')


def exact_entry(key: str, action_id: int, param: Optional[str] = None) -> str:
    params = f' params {{ param_id: 1 value: "{param}" }}' if param is not None else ""
    return (f'table_entry {{ table_id: {T_EXACT} match {{ field_id: 1 exact {{ value: "{key}" }} }} '
            f'action {{ action {{ action_id: {action_id}{params} }} }} }}')


# ======================================================================== 0 start
S = "0 start"


def _start(p: Probe) -> Outcome:
    p.fresh_server()
    return call(lambda: p.client().stub.Capabilities(pb.CapabilitiesRequest()).p4runtime_api_version)


row(S, "Capabilities", _start, check=lambda o, p: o.value == "1.3.0")


def _first_primary(p: Probe) -> Outcome:
    out = p.arbitrate("primary", 10)
    p.primary = p.named["primary"]
    return out


row(S, "arbitration: first client, election_id 10 (becomes primary)", _first_primary,
    check=arbitration("OK", 10, "is primary"))
row(S, "GetForwardingPipelineConfig(ALL) before any pipeline", lambda p: p.getfpc(), "FAILED_PRECONDITION")
row(S, "Write (INSERT t_exact) before any pipeline",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(1, 6), action=("set_port_counted", port(1))))),
    "FAILED_PRECONDITION")
row(S, "Read (wildcard t_exact) before any pipeline",
    lambda p: p.read(ent(table_entry=te(p, "t_exact"))), "FAILED_PRECONDITION")
row(S, "SetFPC COMMIT (no config) with nothing saved (before any pipeline)",
    lambda p: p.setfpc(Req.COMMIT, with_config=False), "UNKNOWN")

# ======================================================================== 1 arbitration
S = "1 arbitration"
row(S, "arbitration: 2nd client, lower election_id 5", lambda p: p.arbitrate("backup", 5),
    check=arbitration("ALREADY_EXISTS", 10, "is backup"))
row(S, "primary's stream after a backup joins (0.5 s)",
    lambda p: Outcome("OK", value=p.drain(p.primary, 0.5)), check=lambda o, p: o.value == [])
row(S, "arbitration: 3rd client, election_id equal to primary's (10)", lambda p: p.arbitrate("third", 10),
    "INVALID_ARGUMENT")
row(S, "Write from backup (election_id 5, its stream open)",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(1, 6), action=("drop",))), eid=5),
    "PERMISSION_DENIED")
row(S, "Write with election_id 11 (higher than primary, no stream)",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(1, 6), action=("drop",))), eid=11),
    "PERMISSION_DENIED")
row(S, "Write without election_id",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(1, 6), action=("drop",))), eid=0),
    "PERMISSION_DENIED")
row(S, "SetFPC VERIFY_AND_COMMIT from backup (election_id 5)",
    lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, eid=5), "PERMISSION_DENIED")
row(S, "SetFPC VERIFY_AND_COMMIT without election_id",
    lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, eid=None), "PERMISSION_DENIED")
row(S, "arbitration: client with role.name 'probe_role' (no role config), election_id 20",
    lambda p: p.arbitrate("role", 20, role="probe_role"), check=arbitration("OK", 20, "is primary"))

# ======================================================================== 2 pipeline config
S = "2 pipeline config"
KEEP_VERIFYING = ("the P4Runtime spec wants VERIFY to verify the config; BMv2's VERIFY looks at "
                  "neither the device config nor the P4Info (p4sim keeps refusing: INVALID_ARGUMENT)")
row(S, "SetFPC VERIFY", lambda p: p.setfpc(Req.VERIFY))
row(S, "SetFPC VERIFY with garbage device config (b'garbage')",
    lambda p: p.setfpc(Req.VERIFY, config=b"garbage"), "INVALID_ARGUMENT", exception=KEEP_VERIFYING)


def _lacking_table(p: Probe) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    info.CopyFrom(p.p4info)
    del info.tables[0]
    return info


row(S, "SetFPC VERIFY with P4Info lacking one table (mismatch)",
    lambda p: p.setfpc(Req.VERIFY, p4info=_lacking_table(p)), "INVALID_ARGUMENT", exception=KEEP_VERIFYING)
row(S, "SetFPC VERIFY with empty P4Info",
    lambda p: p.setfpc(Req.VERIFY, p4info=p4info_pb2.P4Info()), "INVALID_ARGUMENT", exception=KEEP_VERIFYING)
row(S, "SetFPC action UNSPECIFIED", lambda p: p.setfpc(Req.UNSPECIFIED), "INVALID_ARGUMENT")
row(S, "SetFPC VERIFY_AND_COMMIT wrong device_id (7)",
    lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, device_id=7), "PERMISSION_DENIED")
row(S, "SetFPC VERIFY_AND_SAVE", lambda p: p.setfpc(Req.VERIFY_AND_SAVE, cookie=111))
row(S, "GetFPC(ALL) after VERIFY_AND_SAVE (nothing committed yet)", lambda p: p.getfpc(),
    check=fpc(True, True, 111))
row(S, "Write INSERT t_exact after VERIFY_AND_SAVE, before COMMIT",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(0x51, 6), action=("set_port_counted", port(1))))))
row(S, "SetFPC COMMIT (no config, after VERIFY_AND_SAVE)", lambda p: p.setfpc(Req.COMMIT, with_config=False))
row(S, "Read t_exact after COMMIT (entry written between SAVE and COMMIT kept?)",
    lambda p: p.read(ent(table_entry=te(p, "t_exact"))), check=is_texts(exact_entry("Q", 31357437, r"\001")))
row(S, "SetFPC COMMIT (no config) again, nothing newly saved",
    lambda p: p.setfpc(Req.COMMIT, with_config=False), "UNKNOWN")
row(S, "SetFPC VERIFY_AND_SAVE (cookie 112)", lambda p: p.setfpc(Req.VERIFY_AND_SAVE, cookie=112))
row(S, "SetFPC COMMIT with the config repeated in the request", lambda p: p.setfpc(Req.COMMIT, cookie=112))
row(S, "SetFPC COMMIT (no config) after that", lambda p: p.setfpc(Req.COMMIT, with_config=False), "UNKNOWN")
row(S, "GetFPC(COOKIE_ONLY) now", lambda p: p.getfpc(Get.COOKIE_ONLY), check=fpc(None, None, 112))
row(S, "SetFPC VERIFY_AND_COMMIT (cookie 1234)", lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, cookie=1234))
row(S, "Read t_exact after VERIFY_AND_COMMIT (state reset?)",
    lambda p: p.read(ent(table_entry=te(p, "t_exact"))), check=count(0))
row(S, "GetFPC(ALL)", lambda p: p.getfpc(), check=fpc(True, True, 1234))
row(S, "GetFPC(COOKIE_ONLY)", lambda p: p.getfpc(Get.COOKIE_ONLY), check=fpc(None, None, 1234))
row(S, "GetFPC(P4INFO_AND_COOKIE)", lambda p: p.getfpc(Get.P4INFO_AND_COOKIE), check=fpc(True, None, 1234))
row(S, "GetFPC(DEVICE_CONFIG_AND_COOKIE)", lambda p: p.getfpc(Get.DEVICE_CONFIG_AND_COOKIE),
    check=fpc(None, True, 1234))
row(S, "GetFPC wrong device_id (7)", lambda p: p.getfpc(device_id=7), "FAILED_PRECONDITION")

# ======================================================================== 3 device config forms
S = "3 device config forms (VERIFY)"
NO_BMV2_JSON = ("p4sim runs P4 source, not p4c-bm2-ss's JSON: VERIFY of a config the switch cannot run "
                "must fail (the spec); INVALID_ARGUMENT naming the accepted forms")
row(S, "SetFPC VERIFY, device config = raw BMv2 JSON (no wrapper)",
    lambda p: p.setfpc(Req.VERIFY, config=BMV2_JSON, wrap=False), "INVALID_ARGUMENT", exception=NO_BMV2_JSON)
row(S, "SetFPC VERIFY, device config = P4DeviceConfig{device_data=BMv2 JSON}",
    lambda p: p.setfpc(Req.VERIFY, config=BMV2_JSON, wrap=True), "INVALID_ARGUMENT", exception=NO_BMV2_JSON)
row(S, "SetFPC VERIFY, device config = raw p4sim config", lambda p: p.setfpc(Req.VERIFY, wrap=False))
row(S, "SetFPC VERIFY, device config = P4DeviceConfig{device_data=p4sim config}",
    lambda p: p.setfpc(Req.VERIFY, wrap=True))

S = "3b RECONCILE_AND_COMMIT"
RECONCILE = ("BMv2 fails RECONCILE_AND_COMMIT on this program only because it replays the const entries "
             "and counters/meters as INSERTs (it still takes the new cookie and keeps the entries; on "
             "basic.p4 it answers OK), and then refuses every VERIFY_AND_COMMIT: both are BMv2 bugs, p4sim "
             "answers OK")
row(S, "Write INSERT t_exact (before RECONCILE_AND_COMMIT)",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(0x52, 6), action=("set_port_counted", port(1))))))
row(S, "SetFPC RECONCILE_AND_COMMIT (same config, cookie 5678)",
    lambda p: p.setfpc(Req.RECONCILE_AND_COMMIT, cookie=5678), exception=RECONCILE)
row(S, "Read t_exact after RECONCILE_AND_COMMIT (state kept?)",
    lambda p: p.read(ent(table_entry=te(p, "t_exact"))), check=is_texts(exact_entry("R", 31357437, r"\001")))
row(S, "GetFPC(COOKIE_ONLY) after RECONCILE_AND_COMMIT", lambda p: p.getfpc(Get.COOKIE_ONLY),
    check=fpc(None, None, 5678))
row(S, "SetFPC VERIFY_AND_COMMIT after RECONCILE_AND_COMMIT",
    lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, cookie=5679), exception=RECONCILE)
row(S, "SetFPC VERIFY_AND_COMMIT once more", lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, cookie=5680),
    exception=RECONCILE)

S = "3c RECONCILE_AND_COMMIT first (fresh server)"
CRASH = "simple_switch_grpc crashes (SIGSEGV) on this request; p4sim commits the config and stays up"


def _fresh_primary(p: Probe) -> Outcome:
    p.fresh_server()
    return _first_primary(p)


row(S, "(fresh server) arbitration, election_id 10", _fresh_primary, check=arbitration("OK", 10, "is primary"))
row(S, "SetFPC RECONCILE_AND_COMMIT as the first pipeline push",
    lambda p: p.setfpc(Req.RECONCILE_AND_COMMIT, cookie=7), exception=CRASH)
row(S, "Capabilities right after (server still alive?)",
    lambda p: call(lambda: p.stub.Capabilities(pb.CapabilitiesRequest()).p4runtime_api_version),
    check=lambda o, p: o.value == "1.3.0", exception=CRASH)
row(S, "GetFPC(COOKIE_ONLY) after it", lambda p: p.getfpc(Get.COOKIE_ONLY), check=fpc(None, None, 7),
    exception=CRASH)

S = "3d fresh server for entity probes"
row(S, "(fresh server) arbitration, election_id 10", _fresh_primary, check=arbitration("OK", 10, "is primary"))
row(S, "SetFPC VERIFY_AND_COMMIT (cookie 42)", lambda p: p.setfpc(Req.VERIFY_AND_COMMIT, cookie=42))
PIPELINE_ROWS = len(ROWS)


# ======================================================================== 4 table: exact
def w(utype: int, table: str, *matches: Any, **kw: Any) -> Callable[[Probe], Outcome]:
    """A one-update Write of a table entry (``kw`` as for :func:`te`)."""
    return lambda p: p.write(upd(utype, table_entry=te(p, table, *matches, **kw)))


def r(table: str, *matches: Any, **kw: Any) -> Callable[[Probe], Outcome]:
    return lambda p: p.read(ent(table_entry=te(p, table, *matches, **kw)))


S = "4 table: exact"
SPC = "set_port_counted"
row(S, "INSERT", w(U.INSERT, "t_exact", ex(1, 6), action=(SPC, port(1))))
row(S, "INSERT duplicate", w(U.INSERT, "t_exact", ex(1, 6), action=(SPC, port(1))), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "MODIFY", w(U.MODIFY, "t_exact", ex(1, 6), action=(SPC, port(2))))
row(S, "MODIFY missing entry", w(U.MODIFY, "t_exact", ex(0x99, 6), action=(SPC, port(2))), "UNKNOWN", ("NOT_FOUND",))
row(S, "Read specific (match key given)", r("t_exact", ex(1, 6)), check=is_texts(exact_entry(r"\001", 31357437, r"\002")))
row(S, "Read wildcard (table_id)", r("t_exact"), check=is_texts(exact_entry(r"\001", 31357437, r"\002")))
row(S, "Read all tables (table_id 0)", lambda p: p.read(ent(table_entry=pb.TableEntry())),
    check=is_texts(exact_entry(r"\001", 31357437, r"\002"), *CONST_ENTRIES))
row(S, "Read specific, missing key", r("t_exact", ex(0x99, 6)), check=count(0))
row(S, "DELETE", w(U.DELETE, "t_exact", ex(1, 6)))
row(S, "DELETE missing (again)", w(U.DELETE, "t_exact", ex(1, 6)), "UNKNOWN", ("NOT_FOUND",))
row(S, "INSERT with canonical short bytes (1 byte for bit<48>)", w(U.INSERT, "t_exact", ex(5, 1), action=("drop",)))
row(S, "Read it back (bytes as returned)", r("t_exact", ex(5, 1)), check=is_texts(exact_entry(r"\005", 25652968)))
row(S, "Read it back with full-width key", r("t_exact", ex(5, 6)), check=is_texts(exact_entry(r"\005", 25652968)))
row(S, "DELETE it (full-width key)", w(U.DELETE, "t_exact", ex(5, 6)))

# ======================================================================== 5 table: lpm
S = "5 table: lpm"
SPM = "set_port_metered"
LPM_ENTRY = (r'table_entry { table_id: 40232913 match { field_id: 1 lpm { value: "\n\000\000\000" prefix_len: 8 } } '
             r'action { action { action_id: 27517548 params { param_id: 1 value: "\003" } } } }')
row(S, "INSERT 10.0.0.0/8", w(U.INSERT, "t_lpm", ("lpm", ip(10), 8), action=(SPM, port(1))))
row(S, "INSERT 10.0.0.1/8 (bits set beyond prefix)", w(U.INSERT, "t_lpm", ("lpm", ip(10, 0, 0, 1), 8), action=(SPM, port(1))),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT 0.0.0.0/0 given explicitly (spec: omit the field)",
    w(U.INSERT, "t_lpm", ("lpm", ip(0), 0), action=(SPM, port(1))), "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT prefix_len 33 on bit<32>", w(U.INSERT, "t_lpm", ("lpm", ip(10), 33), action=(SPM, port(1))),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "MODIFY 10.0.0.0/8", w(U.MODIFY, "t_lpm", ("lpm", ip(10), 8), action=(SPM, port(3))))
row(S, "Read specific", r("t_lpm", ("lpm", ip(10), 8)), check=is_texts(LPM_ENTRY))
row(S, "Read wildcard", r("t_lpm"), check=is_texts(LPM_ENTRY))
row(S, "DELETE", w(U.DELETE, "t_lpm", ("lpm", ip(10), 8)))
row(S, "Read wildcard after DELETE", r("t_lpm"), check=count(0))

# ======================================================================== 6 table: ternary
S = "6 table: ternary"
TERN = ("ternary", ip(10), ip(255))
PROTO6 = ("exact", b"\x06")


def _priorities(*want: int) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:
        assert sorted(e.table_entry.priority for e in out.entities) == sorted(want)
        first = [e for e in out.entities if e.table_entry.priority == 10]
        if first:
            assert text(first[0]) == (
                r'table_entry { table_id: 37604265 match { field_id: 1 ternary { value: "\n\000\000\000" '
                r'mask: "\377\000\000\000" } } match { field_id: 2 exact { value: "\006" } } action { action { '
                r'action_id: 29586029 params { param_id: 1 value: "\001" } } } priority: 10 }')
    return check


row(S, "INSERT priority 10", w(U.INSERT, "t_ternary", TERN, PROTO6, action=("set_port", port(1)), priority=10))
row(S, "INSERT same match, priority 20", w(U.INSERT, "t_ternary", TERN, PROTO6, action=("set_port", port(1)), priority=20))
row(S, "INSERT duplicate (same match, priority 10)",
    w(U.INSERT, "t_ternary", TERN, PROTO6, action=("set_port", port(1)), priority=10), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "INSERT without priority (0)", w(U.INSERT, "t_ternary", TERN, PROTO6, action=("set_port", port(1))),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT value bits outside mask (10.0.0.1 &&& 255.0.0.0)",
    w(U.INSERT, "t_ternary", ("ternary", ip(10, 0, 0, 1), ip(255)), PROTO6, action=("set_port", port(1)), priority=30),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT all-zero mask given explicitly (spec: omit)",
    w(U.INSERT, "t_ternary", ("ternary", ip(0), ip(0)), PROTO6, action=("set_port", port(1)), priority=30),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT ternary field omitted (wildcard), priority 1",
    w(U.INSERT, "t_ternary", None, PROTO6, action=("set_port", port(1)), priority=1))
row(S, "Read wildcard", r("t_ternary"), check=_priorities(10, 20, 1))
row(S, "Read specific (match + priority 10)", r("t_ternary", TERN, PROTO6, priority=10), check=_priorities(10))
row(S, "MODIFY priority-10 entry", w(U.MODIFY, "t_ternary", TERN, PROTO6, action=("set_port", port(2)), priority=10))
row(S, "DELETE priority-10 entry", w(U.DELETE, "t_ternary", TERN, PROTO6, priority=10))
row(S, "DELETE priority-10 entry again (missing)", w(U.DELETE, "t_ternary", TERN, PROTO6, priority=10),
    "UNKNOWN", ("NOT_FOUND",))
row(S, "DELETE priority-20 entry", w(U.DELETE, "t_ternary", TERN, PROTO6, priority=20))
row(S, "DELETE wildcard entry", w(U.DELETE, "t_ternary", None, PROTO6, priority=1))

# ======================================================================== 7 table: range
S = "7 table: range"
RNG = ("range", (100).to_bytes(2, "big"), (200).to_bytes(2, "big"))
row(S, "INSERT [100,200] priority 10", w(U.INSERT, "t_range", RNG, action=("set_port", port(1)), priority=10))
row(S, "INSERT low > high [300,200]",
    w(U.INSERT, "t_range", ("range", (300).to_bytes(2, "big"), (200).to_bytes(2, "big")), action=("set_port", port(1)),
      priority=11), "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT without priority", w(U.INSERT, "t_range", RNG, action=("set_port", port(1))), "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "INSERT full range [0,65535] given explicitly (spec: omit)",
    w(U.INSERT, "t_range", ("range", b"\x00\x00", b"\xff\xff"), action=("set_port", port(1)), priority=12),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "Read wildcard", r("t_range"), check=is_texts(
    r'table_entry { table_id: 43542690 match { field_id: 1 range { low: "d" high: "\310" } } action { action { '
    r'action_id: 29586029 params { param_id: 1 value: "\001" } } } priority: 10 }'))
row(S, "MODIFY [100,200]", w(U.MODIFY, "t_range", RNG, action=("set_port", port(1)), priority=10))
row(S, "DELETE [100,200]", w(U.DELETE, "t_range", RNG, priority=10))

# ======================================================================== 8 table: optional
S = "8 table: optional"
OPT = ("optional", b"\x05")
TTL = ("exact", b"\x40")
row(S, "INSERT diffserv=5 ttl=64 priority 10", w(U.INSERT, "t_optional", OPT, TTL, action=("set_port", port(1)), priority=10))
row(S, "INSERT optional omitted (wildcard), ttl=64 priority 5",
    w(U.INSERT, "t_optional", None, TTL, action=("set_port", port(1)), priority=5))
row(S, "INSERT without priority", w(U.INSERT, "t_optional", OPT, TTL, action=("set_port", port(1))),
    "UNKNOWN", ("INVALID_ARGUMENT",))
row(S, "Read wildcard", r("t_optional"), check=is_texts(
    r'table_entry { table_id: 34467563 match { field_id: 1 optional { value: "\005" } } match { field_id: 2 exact { '
    r'value: "@" } } action { action { action_id: 29586029 params { param_id: 1 value: "\001" } } } priority: 10 }',
    r'table_entry { table_id: 34467563 match { field_id: 2 exact { value: "@" } } action { action { '
    r'action_id: 29586029 params { param_id: 1 value: "\001" } } } priority: 5 }', ordered=False))
row(S, "MODIFY diffserv=5 entry", w(U.MODIFY, "t_optional", OPT, TTL, action=("set_port", port(2)), priority=10))
row(S, "DELETE diffserv=5 entry", w(U.DELETE, "t_optional", OPT, TTL, priority=10))
row(S, "DELETE wildcard entry", w(U.DELETE, "t_optional", None, TTL, priority=5))

# ======================================================================== 9 table entry errors
S = "9 table entry errors"
IA = ("INVALID_ARGUMENT",)
row(S, "INSERT unknown table id (0x02ffffff)", w(U.INSERT, 0x02ffffff, ex(3, 6), action=(SPC, port(1))), "UNKNOWN", IA)
row(S, "INSERT bad match width (7 bytes for bit<48>)",
    w(U.INSERT, "t_exact", ("exact", bytes.fromhex("01000000000001")), action=(SPC, port(1))), "UNKNOWN", IA)
row(S, "INSERT unknown match field id (9)", w(U.INSERT, "t_exact", ("exact", mac(3), None, 9), action=(SPC, port(1))),
    "UNKNOWN", IA)
row(S, "INSERT exact field missing", w(U.INSERT, "t_exact", None, action=(SPC, port(1))), "UNKNOWN", IA)
row(S, "INSERT wrong match kind (lpm on exact field)", w(U.INSERT, "t_exact", ("lpm", mac(3), 48), action=(SPC, port(1))),
    "UNKNOWN", IA)
row(S, "INSERT unknown action id", w(U.INSERT, "t_exact", ex(3, 6), action=(0x01ffffff,)), "UNKNOWN", IA)
row(S, "INSERT action not in table (set_dmac on t_exact)",
    w(U.INSERT, "t_exact", ex(3, 6), action=("set_dmac", {1: mac(1)})), "UNKNOWN", IA)
row(S, "INSERT action param missing", w(U.INSERT, "t_exact", ex(3, 6), action=(SPC, {})), "UNKNOWN", IA)
row(S, "INSERT action param too wide (512 in bit<9>, 2 bytes)",
    w(U.INSERT, "t_exact", ex(3, 6), action=(SPC, port(512))), "UNKNOWN", IA)
row(S, "INSERT action param too many bytes (3 bytes for bit<9>)",
    w(U.INSERT, "t_exact", ex(2, 6), action=(SPC, port(1, 3))))
row(S, "INSERT without action", w(U.INSERT, "t_exact", ex(3, 6)), "UNKNOWN", IA)
row(S, "INSERT priority on an exact-only table", w(U.INSERT, "t_exact", ex(3, 6), action=(SPC, port(1)), priority=5),
    "UNKNOWN", IA)
row(S, "Read t_exact after the error probes", r("t_exact"), check=is_texts(exact_entry(r"\002", 31357437, r"\001")))
row(S, "Write wrong device_id (7)",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(3, 6), action=(SPC, port(1)))), device_id=7),
    "PERMISSION_DENIED")
row(S, "Write with no updates", lambda p: p.write())
row(S, "Write update type UNSPECIFIED",
    lambda p: p.write(upd(U.UNSPECIFIED, table_entry=te(p, "t_exact", ex(3, 6), action=(SPC, port(1))))), "UNKNOWN", IA)
row(S, "Write update with no entity", lambda p: p.write(U(type=U.INSERT)), "UNKNOWN", ("UNKNOWN",))
row(S, "Write ExternEntry",
    lambda p: p.write(upd(U.MODIFY, extern_entry=pb.ExternEntry(extern_type_id=1, extern_id=1))), "UNKNOWN",
    ("UNIMPLEMENTED",))

# ======================================================================== 10 batches
S = "10 batches"
A_, B_, C_, D_, X_ = 0x21, 0x22, 0x23, 0x24, 0x25


def ins(p: Probe, key: int) -> pb.Update:
    return upd(U.INSERT, table_entry=te(p, "t_exact", ex(key, 6), action=("drop",)))


def dele(p: Probe, key: int) -> pb.Update:
    return upd(U.DELETE, table_entry=te(p, "t_exact", ex(key, 6)))


W = pb.WriteRequest
row(S, "INSERT entry A (setup)", lambda p: p.write(ins(p, A_)))
row(S, "batch [INSERT new B, INSERT duplicate A] (CONTINUE_ON_ERROR)", lambda p: p.write(ins(p, B_), ins(p, A_)),
    "UNKNOWN", ("OK", "ALREADY_EXISTS"))
row(S, "Read: was B applied?", r("t_exact", ex(B_, 6)), check=is_texts(exact_entry(r'\"', 25652968)))
row(S, "batch [INSERT duplicate A, INSERT new C, DELETE missing]",
    lambda p: p.write(ins(p, A_), ins(p, C_), dele(p, 0x99)), "UNKNOWN", ("ALREADY_EXISTS", "OK", "NOT_FOUND"))
row(S, "batch ROLLBACK_ON_ERROR [INSERT new D, INSERT duplicate A]",
    lambda p: p.write(ins(p, D_), ins(p, A_), atomicity=W.ROLLBACK_ON_ERROR), "UNIMPLEMENTED")
row(S, "Read: was D applied (rollback)?", r("t_exact", ex(D_, 6)), check=count(0))
row(S, "batch DATAPLANE_ATOMIC [INSERT new D]", lambda p: p.write(ins(p, D_), atomicity=W.DATAPLANE_ATOMIC),
    "UNIMPLEMENTED")
row(S, "batch ROLLBACK_ON_ERROR, all good [DELETE D]",
    lambda p: p.write(dele(p, D_), atomicity=W.ROLLBACK_ON_ERROR), "UNIMPLEMENTED")
row(S, "batch [INSERT X, DELETE X] in one request", lambda p: p.write(ins(p, X_), dele(p, X_)))
row(S, "Read wildcard t_exact after batches", r("t_exact"), check=is_texts(
    exact_entry(r"\002", 31357437, r"\001"), exact_entry("!", 25652968), exact_entry(r'\"', 25652968),
    exact_entry("#", 25652968), ordered=False))

# ======================================================================== 11 default entries
S = "11 default entries"


def default(p: Probe, table: str, action: Any = None) -> pb.TableEntry:
    return te(p, table, action=action, is_default_action=True)


def _read_default_after_cleanup(p: Probe) -> Outcome:
    out = p.write(dele(p, A_), dele(p, B_), dele(p, C_))       # the probe's cleanup of section 10
    assert out.code == "OK"
    return p.read(ent(table_entry=default(p, "t_exact")))


DEFAULT_NOACTION = 'table_entry { table_id: 38514850 action { action { action_id: 21257015 } } is_default_action: true }'
row(S, "Read t_exact default entry", _read_default_after_cleanup, check=is_texts(DEFAULT_NOACTION))
row(S, "MODIFY t_exact default -> drop", lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_exact", ("drop",)))))
row(S, "Read t_exact default after MODIFY", lambda p: p.read(ent(table_entry=default(p, "t_exact"))), check=is_texts(
    'table_entry { table_id: 38514850 action { action { action_id: 25652968 } } is_default_action: true }'))
row(S, "MODIFY t_exact default -> set_port_counted(7)",
    lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_exact", (SPC, port(7))))))
row(S, "MODIFY t_exact default with no action (reset)",
    lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_exact"))))
row(S, "Read t_exact default after reset", lambda p: p.read(ent(table_entry=default(p, "t_exact"))),
    check=is_texts(DEFAULT_NOACTION))
row(S, "INSERT default entry", lambda p: p.write(upd(U.INSERT, table_entry=default(p, "t_exact", ("drop",)))),
    "UNKNOWN", IA)
row(S, "DELETE default entry", lambda p: p.write(upd(U.DELETE, table_entry=default(p, "t_exact"))), "UNKNOWN", IA)
row(S, "MODIFY default entry with a match key",
    lambda p: p.write(upd(U.MODIFY, table_entry=te(p, "t_exact", ex(9, 6), action=("drop",), is_default_action=True))),
    "UNKNOWN", IA)
row(S, "Read wildcard t_exact (is the default entry included?)", r("t_exact"),
    check=is_texts(exact_entry(r"\002", 31357437, r"\001")))
row(S, "Read t_const_default default entry", lambda p: p.read(ent(table_entry=default(p, "t_const_default"))),
    check=is_texts('table_entry { table_id: 44083313 action { action { action_id: 25652968 } } is_default_action: true }'))
row(S, "MODIFY t_const_default default -> set_port(1)",
    lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_const_default", ("set_port", port(1))))),
    "UNKNOWN", ("PERMISSION_DENIED",))
row(S, "MODIFY t_const_default default -> drop (same action)",
    lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_const_default", ("drop",)))),
    "UNKNOWN", ("PERMISSION_DENIED",))
row(S, "MODIFY t_profile default (action-profile table) -> NoAction",
    lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_profile", ("NoAction",)))), "UNKNOWN", IA)

# ======================================================================== 12 const entries
S = "12 const entries"
ETYPE_ARP = ("exact", b"\x08\x06")
row(S, "Read wildcard t_const_entries", r("t_const_entries"), check=is_texts(*CONST_ENTRIES))
row(S, "INSERT into t_const_entries",
    w(U.INSERT, "t_const_entries", ("exact", b"\x12\x34"), action=("set_port", port(1))), "UNKNOWN", ("UNKNOWN",))
row(S, "MODIFY const entry 0x0806", w(U.MODIFY, "t_const_entries", ETYPE_ARP, action=("set_port", port(3))),
    "UNKNOWN", ("NOT_FOUND",))
row(S, "DELETE const entry 0x0806", w(U.DELETE, "t_const_entries", ETYPE_ARP), "UNKNOWN", ("NOT_FOUND",))
row(S, "MODIFY t_const_entries default (not const) -> drop",
    lambda p: p.write(upd(U.MODIFY, table_entry=default(p, "t_const_entries", ("drop",)))))

# ======================================================================== 13 idle timeout
S = "13 idle timeout"
IDLE_KEY = ("exact", b"\x0a")


def _idle_read(*want: str) -> Callable[[Outcome, Probe], None]:
    return is_texts(*want, ordered=False)


def _elapsed(out: Outcome, p: Probe) -> None:
    [e] = out.entities
    assert e.table_entry.idle_timeout_ns == 500_000_000
    assert e.table_entry.HasField("time_since_last_hit") and e.table_entry.time_since_last_hit.elapsed_ns > 0


def _idle_notification(p: Probe) -> Outcome:
    end = time.monotonic() + 4
    while time.monotonic() < end:
        for msg in p.drain(p.primary, 0.2, idle=True):
            if msg.WhichOneof("update") == "idle_timeout_notification":
                return Outcome("OK", value=msg.idle_timeout_notification)
    return Outcome("NONE")


def _is_idle_note(out: Outcome, p: Probe) -> None:
    [e] = out.value.table_entry
    assert text(e) == ('table_id: 41805339 match { field_id: 1 exact { value: "\\n" } } '
                       'idle_timeout_ns: 500000000')


IDLE_10 = ('table_entry { table_id: 41805339 match { field_id: 1 exact { value: "\\n" } } action { action { '
           'action_id: 21257015 } } idle_timeout_ns: %d }')
row(S, "INSERT t_idle entry with idle_timeout_ns=5e8",
    w(U.INSERT, "t_idle", IDLE_KEY, action=("NoAction",), idle_timeout_ns=500_000_000))
row(S, "Read t_idle entry", r("t_idle", IDLE_KEY), check=is_texts(IDLE_10 % 500_000_000))
row(S, "Read t_idle entry requesting time_since_last_hit",
    lambda p: p.read(ent(table_entry=te(p, "t_idle", IDLE_KEY, time_since_last_hit=pb.TableEntry.IdleTimeout()))),
    check=_elapsed)
row(S, "INSERT t_idle entry without idle_timeout_ns", w(U.INSERT, "t_idle", ("exact", b"\x0b"), action=("NoAction",)))
row(S, "INSERT t_exact (no support_timeout) with idle_timeout_ns",
    w(U.INSERT, "t_exact", ex(0x31, 6), action=("drop",), idle_timeout_ns=500_000_000), "UNKNOWN", IA)
row(S, "IdleTimeoutNotification on primary stream (within 4 s)", _idle_notification, check=_is_idle_note)
row(S, "MODIFY t_idle entry idle_timeout_ns=2e9",
    w(U.MODIFY, "t_idle", IDLE_KEY, action=("NoAction",), idle_timeout_ns=2_000_000_000))
row(S, "Read t_idle wildcard", r("t_idle"), check=_idle_read(
    IDLE_10 % 2_000_000_000,
    'table_entry { table_id: 41805339 match { field_id: 1 exact { value: "\\013" } } action { action { '
    'action_id: 21257015 } } }'))
row(S, "DELETE t_idle entries", lambda p: p.write(upd(U.DELETE, table_entry=te(p, "t_idle", IDLE_KEY)),
                                                  upd(U.DELETE, table_entry=te(p, "t_idle", ("exact", b"\x0b")))))
row(S, "DELETE t_exact 0x31 (cleanup if it went in)", w(U.DELETE, "t_exact", ex(0x31, 6)), "UNKNOWN", ("NOT_FOUND",))

# ======================================================================== 14 direct counter
S = "14 direct counter"
CANONICAL = ("BMv2 echoes the request's key bytes (full width) in a DirectCounterEntry read; the spec wants "
             "canonical bytestrings in read responses, which BMv2 itself returns for table entries: p4sim "
             "keeps the canonical form")


def dce(p: Probe, table: str, *matches: Any, data: Optional[tuple[int, int]] = None, **kw: Any) -> pb.DirectCounterEntry:
    d = pb.DirectCounterEntry(table_entry=te(p, table, *matches, **kw))
    if data is not None:
        d.data.packet_count, d.data.byte_count = data
    return d


def dce_text(key: str, data: str = "") -> str:
    return (f'direct_counter_entry {{ table_entry {{ table_id: {T_EXACT} match {{ field_id: 1 exact {{ value: "{key}" }} }} }} '
            f'data {{{" " + data + " " if data else " "}}} }}')


row(S, "INSERT t_exact entry (setup)", w(U.INSERT, "t_exact", ex(0x41, 6), action=(SPC, port(1))))
row(S, "Read DirectCounterEntry (specific)", lambda p: p.read(ent(direct_counter_entry=dce(p, "t_exact", ex(0x41, 6)))),
    check=is_texts(dce_text("A")), exception=CANONICAL)
row(S, "MODIFY DirectCounterEntry (5 pkts, 500 bytes)",
    lambda p: p.write(upd(U.MODIFY, direct_counter_entry=dce(p, "t_exact", ex(0x41, 6), data=(5, 500)))))
row(S, "Read DirectCounterEntry after MODIFY", lambda p: p.read(ent(direct_counter_entry=dce(p, "t_exact", ex(0x41, 6)))),
    check=is_texts(dce_text("A", "byte_count: 500 packet_count: 5")), exception=CANONICAL)
row(S, "Read TableEntry with counter_data requested",
    lambda p: p.read(ent(table_entry=te(p, "t_exact", ex(0x41, 6), counter_data=pb.CounterData()))),
    check=is_texts(exact_entry("A", 31357437, r"\001")[:-2] + " counter_data { byte_count: 500 packet_count: 5 } }"))
row(S, "Read TableEntry without counter_data requested", r("t_exact", ex(0x41, 6)),
    check=is_texts(exact_entry("A", 31357437, r"\001")))
row(S, "Read DirectCounterEntry wildcard (table_id only)",
    lambda p: p.read(ent(direct_counter_entry=dce(p, "t_exact"))),
    check=is_texts(dce_text(r"\002"), dce_text("A", "byte_count: 500 packet_count: 5"), ordered=False))
row(S, "Read DirectCounterEntry, all tables (table_id 0)",
    lambda p: p.read(ent(direct_counter_entry=pb.DirectCounterEntry(table_entry=pb.TableEntry()))), "UNIMPLEMENTED")
row(S, "INSERT DirectCounterEntry",
    lambda p: p.write(upd(U.INSERT, direct_counter_entry=dce(p, "t_exact", ex(0x41, 6), data=(1, 1)))), "UNKNOWN", IA)
row(S, "DELETE DirectCounterEntry", lambda p: p.write(upd(U.DELETE, direct_counter_entry=dce(p, "t_exact", ex(0x41, 6)))))
row(S, "MODIFY DirectCounterEntry, missing table entry",
    lambda p: p.write(upd(U.MODIFY, direct_counter_entry=dce(p, "t_exact", ex(0x99, 6), data=(1, 1)))), "UNKNOWN", IA)
row(S, "Read DirectCounterEntry on table without direct counter (t_ternary)",
    lambda p: p.read(ent(direct_counter_entry=dce(p, "t_ternary"))), "INVALID_ARGUMENT")
row(S, "MODIFY DirectCounterEntry on table without direct counter",
    lambda p: p.write(upd(U.MODIFY, direct_counter_entry=dce(p, "t_ternary", TERN, PROTO6, priority=10, data=(1, 1)))),
    "UNKNOWN", IA)
row(S, "INSERT TableEntry with counter_data (7, 700)",
    w(U.INSERT, "t_exact", ex(0x42, 6), action=(SPC, port(1)), counter_data=pb.CounterData(packet_count=7, byte_count=700)))
row(S, "Read its DirectCounterEntry", lambda p: p.read(ent(direct_counter_entry=dce(p, "t_exact", ex(0x42, 6)))),
    check=is_texts(dce_text("B", "byte_count: 700 packet_count: 7")), exception=CANONICAL)
row(S, "MODIFY TableEntry with counter_data (9, 900)",
    w(U.MODIFY, "t_exact", ex(0x42, 6), action=(SPC, port(1)), counter_data=pb.CounterData(packet_count=9, byte_count=900)))
row(S, "Read its DirectCounterEntry after MODIFY", lambda p: p.read(ent(direct_counter_entry=dce(p, "t_exact", ex(0x42, 6)))),
    check=is_texts(dce_text("B", "byte_count: 900 packet_count: 9")), exception=CANONICAL)
row(S, "Read DirectCounterEntry of default entry",
    lambda p: p.read(ent(direct_counter_entry=pb.DirectCounterEntry(table_entry=default(p, "t_exact")))), "UNKNOWN")

# ======================================================================== 15 direct meter
S = "15 direct meter"
LPM10 = ("lpm", ip(10), 8)


def dme(p: Probe, table: str, *matches: Any, config: Optional[tuple[int, int, int, int]] = None) -> pb.DirectMeterEntry:
    d = pb.DirectMeterEntry(table_entry=te(p, table, *matches))
    if config is not None:
        d.config.cir, d.config.cburst, d.config.pir, d.config.pburst = config
    return d


def dme_text(net: str, config: str = "") -> str:
    cfg = f" config {{ {config} }}" if config else ""
    return (f'direct_meter_entry {{ table_entry {{ table_id: 40232913 match {{ field_id: 1 lpm {{ value: "{net}\\000\\000\\000" '
            f'prefix_len: 8 }} }} }}{cfg} }}')


row(S, "INSERT t_lpm entry (setup)", w(U.INSERT, "t_lpm", LPM10, action=(SPM, port(1))))
row(S, "Read DirectMeterEntry (specific, never configured)",
    lambda p: p.read(ent(direct_meter_entry=dme(p, "t_lpm", LPM10))), check=is_texts(dme_text(r"\n")))
row(S, "MODIFY DirectMeterEntry cir=100 cburst=10 pir=200 pburst=20",
    lambda p: p.write(upd(U.MODIFY, direct_meter_entry=dme(p, "t_lpm", LPM10, config=(100, 10, 200, 20)))))
row(S, "Read DirectMeterEntry after MODIFY", lambda p: p.read(ent(direct_meter_entry=dme(p, "t_lpm", LPM10))),
    check=is_texts(dme_text(r"\n", "cir: 100 cburst: 10 pir: 200 pburst: 20")))
row(S, "Read TableEntry with meter_config requested",
    lambda p: p.read(ent(table_entry=te(p, "t_lpm", LPM10, meter_config=pb.MeterConfig()))), check=is_texts(
        r'table_entry { table_id: 40232913 match { field_id: 1 lpm { value: "\n\000\000\000" prefix_len: 8 } } '
        r'action { action { action_id: 27517548 params { param_id: 1 value: "\001" } } } '
        r'meter_config { cir: 100 cburst: 10 pir: 200 pburst: 20 } }'))
row(S, "MODIFY DirectMeterEntry cir > pir (200 > 100)",
    lambda p: p.write(upd(U.MODIFY, direct_meter_entry=dme(p, "t_lpm", LPM10, config=(200, 10, 100, 20)))),
    "UNKNOWN", ("UNKNOWN",))
row(S, "MODIFY DirectMeterEntry without config (reset)",
    lambda p: p.write(upd(U.MODIFY, direct_meter_entry=dme(p, "t_lpm", LPM10))))
row(S, "Read DirectMeterEntry after reset", lambda p: p.read(ent(direct_meter_entry=dme(p, "t_lpm", LPM10))),
    check=is_texts(dme_text(r"\n")))
row(S, "Read DirectMeterEntry wildcard (table_id only)", lambda p: p.read(ent(direct_meter_entry=dme(p, "t_lpm"))),
    check=is_texts(dme_text(r"\n")))
row(S, "INSERT DirectMeterEntry",
    lambda p: p.write(upd(U.INSERT, direct_meter_entry=dme(p, "t_lpm", LPM10, config=(100, 10, 200, 20)))), "UNKNOWN", IA)
row(S, "MODIFY DirectMeterEntry on table without direct meter (t_exact entry)",
    lambda p: p.write(upd(U.MODIFY, direct_meter_entry=dme(p, "t_exact", ex(0x41, 6), config=(100, 10, 200, 20)))),
    "UNKNOWN", IA)
row(S, "INSERT TableEntry with meter_config",
    w(U.INSERT, "t_lpm", ("lpm", ip(11), 8), action=(SPM, port(1)),
      meter_config=pb.MeterConfig(cir=300, cburst=30, pir=600, pburst=60)))
row(S, "Read its DirectMeterEntry", lambda p: p.read(ent(direct_meter_entry=dme(p, "t_lpm", ("lpm", ip(11), 8)))),
    check=is_texts(dme_text(r"\013", "cir: 300 cburst: 30 pir: 600 pburst: 60")))

# ======================================================================== 16 action profile
S = "16 action profile"


def member(p: Probe, profile: str, mid: int, action: Any = None) -> pb.ActionProfileMember:
    m = pb.ActionProfileMember(action_profile_id=p.ids.get(profile, profile) if isinstance(profile, str) else profile,
                               member_id=mid)
    if action is not None:
        m.action.CopyFrom(act(p, *action))
    return m


def group(p: Probe, profile: str, gid: int, members: tuple[Any, ...] = (), max_size: int = 0) -> pb.ActionProfileGroup:
    g = pb.ActionProfileGroup(action_profile_id=p.ids[profile], group_id=gid, max_size=max_size)
    for m in members:
        mid, weight = (m, 1) if isinstance(m, int) else m
        g.members.add(member_id=mid, weight=weight)
    return g


def wm(utype: int, profile: str, mid: int, action: Any = None) -> Callable[[Probe], Outcome]:
    return lambda p: p.write(upd(utype, action_profile_member=member(p, profile, mid, action)))


def wg(utype: int, profile: str, gid: int, members: tuple[Any, ...] = (), max_size: int = 0) -> Callable[[Probe], Outcome]:
    return lambda p: p.write(upd(utype, action_profile_group=group(p, profile, gid, members, max_size)))


MEMBER1 = ('action_profile_member { action_profile_id: 301720477 member_id: 1 action { action_id: 33025127 '
           'params { param_id: 1 value: "\\273" } } }')
DMAC = "dmac_profile"
row(S, "member INSERT (member 1, set_dmac)", wm(U.INSERT, DMAC, 1, ("set_dmac", {1: mac(0xaa)})))
row(S, "member INSERT duplicate", wm(U.INSERT, DMAC, 1, ("set_dmac", {1: mac(0xaa)})), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "member MODIFY", wm(U.MODIFY, DMAC, 1, ("set_dmac", {1: mac(0xbb)})))
row(S, "member MODIFY missing (99)", wm(U.MODIFY, DMAC, 99, ("set_dmac", {1: mac(0xbb)})), "UNKNOWN", ("NOT_FOUND",))
row(S, "member INSERT action not in profile's tables (set_port)", wm(U.INSERT, DMAC, 2, ("set_port", port(1))),
    "UNKNOWN", IA)
row(S, "member INSERT without action", wm(U.INSERT, DMAC, 3), "UNKNOWN", IA)
row(S, "member Read specific", lambda p: p.read(ent(action_profile_member=member(p, DMAC, 1))), check=is_texts(MEMBER1))
row(S, "member Read wildcard (profile id)", lambda p: p.read(ent(action_profile_member=member(p, DMAC, 0))),
    check=is_texts(MEMBER1))
row(S, "member Read all profiles (profile id 0)", lambda p: p.read(ent(action_profile_member=pb.ActionProfileMember())),
    check=is_texts(MEMBER1))
row(S, "table INSERT t_profile -> member 1", w(U.INSERT, "t_profile", ex(0x61, 6), action=("member", 1)))
row(S, "table INSERT t_profile -> missing member 99", w(U.INSERT, "t_profile", ex(0x62, 6), action=("member", 99)),
    "UNKNOWN", IA)
row(S, "table INSERT t_profile with a direct action",
    w(U.INSERT, "t_profile", ex(0x62, 6), action=("set_dmac", {1: mac(1)})), "UNKNOWN", IA)
row(S, "table INSERT t_profile -> group id (profile has no selector)",
    w(U.INSERT, "t_profile", ex(0x62, 6), action=("group", 1)), "UNKNOWN", IA)
row(S, "Read t_profile wildcard", r("t_profile"), check=is_texts(
    'table_entry { table_id: 37072374 match { field_id: 1 exact { value: "a" } } action { action_profile_member_id: 1 } }'))
row(S, "member DELETE while referenced by a table entry", wm(U.DELETE, DMAC, 1), "UNKNOWN", ("UNKNOWN",))
row(S, "group INSERT on action profile without selector", wg(U.INSERT, DMAC, 1))
row(S, "group DELETE on action profile without selector", wg(U.DELETE, DMAC, 1))
row(S, "table DELETE t_profile entry", w(U.DELETE, "t_profile", ex(0x61, 6)))
row(S, "member DELETE (no longer referenced)", wm(U.DELETE, DMAC, 1))
row(S, "member DELETE missing", wm(U.DELETE, DMAC, 1), "UNKNOWN", ("NOT_FOUND",))
row(S, "member INSERT unknown profile id", wm(U.INSERT, 0x11ffffff, 5, ("set_dmac", {1: mac(1)})), "UNKNOWN", IA)
row(S, "table INSERT t_profile one-shot action_set (profile has no selector, no members)",
    w(U.INSERT, "t_profile", ex(0x63, 6), action=("set", [(("set_dmac", {1: mac(1)}), 1)])), "UNKNOWN", ("UNKNOWN",))
row(S, "Read t_profile wildcard after one-shot", r("t_profile"), check=count(0))

# ======================================================================== 17 action selector: one-shot
S = "17 action selector: one-shot"
SEL = "port_selector"


def etype(v: int) -> tuple[str, bytes]:
    return ("exact", v.to_bytes(2, "big"))


def oneshot(*ports_weights: tuple[int, int]) -> tuple[str, list[Any]]:
    return ("set", [(("set_port", port(pt)), wt) for pt, wt in ports_weights])


def oneshot_text(key: str, *ports_weights: tuple[str, int]) -> str:
    acts = " ".join(f'action_profile_actions {{ action {{ action_id: 29586029 params {{ param_id: 1 value: "{pt}" }} }} '
                    f'weight: {wt} }}' for pt, wt in ports_weights)
    return (f'table_entry {{ table_id: 41789884 match {{ field_id: 1 exact {{ value: "{key}" }} }} action {{ '
            f'action_profile_action_set {{ {acts} }} }} }}')


row(S, "table INSERT t_selector one-shot action_set {set_port(1) w1, set_port(2) w1}",
    w(U.INSERT, "t_selector", etype(4), action=oneshot((1, 1), (2, 1))))
row(S, "table INSERT t_selector one-shot, one action weight 3", w(U.INSERT, "t_selector", etype(5), action=oneshot((1, 3))))
row(S, "table INSERT t_selector one-shot with weight 0", w(U.INSERT, "t_selector", etype(6), action=oneshot((1, 0))),
    "UNKNOWN", IA)
row(S, "table INSERT t_selector one-shot with empty action set", w(U.INSERT, "t_selector", etype(7), action=("set", [])),
    "UNKNOWN", IA)
row(S, "Read t_selector wildcard (one-shot entries)", r("t_selector"), check=is_texts(
    oneshot_text(r"\004", (r"\001", 1), (r"\002", 1)), oneshot_text(r"\005", (r"\001", 3)), ordered=False))
row(S, "Read t_selector specific one-shot entry", r("t_selector", etype(4)),
    check=is_texts(oneshot_text(r"\004", (r"\001", 1), (r"\002", 1))))
row(S, "group Read wildcard while one-shot entries exist",
    lambda p: p.read(ent(action_profile_group=group(p, SEL, 0))), "INVALID_ARGUMENT")
row(S, "member Read wildcard while one-shot entries exist",
    lambda p: p.read(ent(action_profile_member=member(p, SEL, 0))), "INVALID_ARGUMENT")
row(S, "table MODIFY one-shot entry -> {set_port(3)}", w(U.MODIFY, "t_selector", etype(4), action=oneshot((3, 1))))
row(S, "Read it after MODIFY", r("t_selector", etype(4)), check=is_texts(oneshot_text(r"\004", (r"\003", 1))))
row(S, "member INSERT into the selector while one-shot entries exist (mixing modes)",
    wm(U.INSERT, SEL, 10, ("set_port", port(1))), "UNKNOWN", IA)
row(S, "table DELETE one-shot entry", lambda p: p.write(upd(U.DELETE, table_entry=te(p, "t_selector", etype(4))),
                                                         upd(U.DELETE, table_entry=te(p, "t_selector", etype(5)))))
row(S, "Read t_selector, groups, members after deleting one-shot entries",
    lambda p: p.read(ent(table_entry=te(p, "t_selector")), ent(action_profile_group=group(p, SEL, 0)),
                     ent(action_profile_member=member(p, SEL, 0))), check=count(0))

S = "17b action selector: members/groups"


def group_text(gid: int, *members: tuple[int, int], max_size: int = 0) -> str:
    ms = "".join(f" members {{ member_id: {m} weight: {wt} }}" for m, wt in members)
    mx = f" max_size: {max_size}" if max_size else ""
    return f"action_profile_group {{ action_profile_id: 299095358 group_id: {gid}{ms}{mx} }}"


PHANTOMS = ("BMv2 also lists g2, g7 and g8, whose INSERT failed (PI leaves an empty group behind): the spec "
            "wants a failed update to change nothing, so p4sim does not copy them; p4sim returns max_size as "
            "written (read-write symmetry), BMv2 drops it")
row(S, "members 10, 11 INSERT (set_port 1, 2)",
    lambda p: p.write(upd(U.INSERT, action_profile_member=member(p, SEL, 10, ("set_port", port(1)))),
                      upd(U.INSERT, action_profile_member=member(p, SEL, 11, ("set_port", port(2))))))
row(S, "group INSERT 1 {10, 11}", wg(U.INSERT, SEL, 1, (10, 11)))
row(S, "group INSERT duplicate", wg(U.INSERT, SEL, 1, (10, 11)), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "group INSERT with missing member 99", wg(U.INSERT, SEL, 2, (10, 99)), "UNKNOWN", ("NOT_FOUND",))
row(S, "group INSERT empty group 3", wg(U.INSERT, SEL, 3))
row(S, "group INSERT with weight 2 member (group 4)", wg(U.INSERT, SEL, 4, ((10, 2),)))
row(S, "group INSERT with weight 0 member (group 8)", wg(U.INSERT, SEL, 8, ((10, 0),)), "UNKNOWN", IA)
row(S, "group INSERT max_size 8 (group 5)", wg(U.INSERT, SEL, 5, (10,), max_size=8))
row(S, "group INSERT max_size 100 > selector size 32 (group 6)", wg(U.INSERT, SEL, 6, (10,), max_size=100))
row(S, "group INSERT 2 members with max_size 1 (group 7)", wg(U.INSERT, SEL, 7, (10, 11), max_size=1),
    "UNKNOWN", ("RESOURCE_EXHAUSTED",))
row(S, "group Read specific", lambda p: p.read(ent(action_profile_group=group(p, SEL, 1))),
    check=is_texts(group_text(1, (10, 1), (11, 1))))
row(S, "group Read wildcard", lambda p: p.read(ent(action_profile_group=group(p, SEL, 0))), check=is_texts(
    group_text(1, (10, 1), (11, 1)), group_text(3), group_text(4, (10, 2)), group_text(5, (10, 1), max_size=8),
    group_text(6, (10, 1), max_size=100), ordered=False), exception=PHANTOMS)
row(S, "group MODIFY 1 -> {10}", wg(U.MODIFY, SEL, 1, (10,)))
row(S, "group Read after MODIFY", lambda p: p.read(ent(action_profile_group=group(p, SEL, 1))),
    check=is_texts(group_text(1, (10, 1))))
row(S, "group MODIFY missing (99)", wg(U.MODIFY, SEL, 99, (10,)), "UNKNOWN", ("NOT_FOUND",))
row(S, "table INSERT t_selector -> group 1", w(U.INSERT, "t_selector", etype(1), action=("group", 1)))
row(S, "table INSERT t_selector -> member 10", w(U.INSERT, "t_selector", etype(2), action=("member", 10)))
row(S, "table INSERT t_selector -> missing group 99", w(U.INSERT, "t_selector", etype(3), action=("group", 99)),
    "UNKNOWN", IA)
row(S, "table INSERT t_selector one-shot while members/groups exist (mixing modes)",
    w(U.INSERT, "t_selector", etype(9), action=oneshot((1, 1))), "UNKNOWN", IA)
row(S, "Read t_selector wildcard", r("t_selector"), check=is_texts(
    'table_entry { table_id: 41789884 match { field_id: 1 exact { value: "\\001" } } action { action_profile_group_id: 1 } }',
    'table_entry { table_id: 41789884 match { field_id: 1 exact { value: "\\002" } } action { action_profile_member_id: 10 } }',
    ordered=False))
row(S, "table MODIFY group entry -> member 11", w(U.MODIFY, "t_selector", etype(1), action=("member", 11)))
row(S, "table MODIFY it back -> group 1", w(U.MODIFY, "t_selector", etype(1), action=("group", 1)))
row(S, "group DELETE while referenced (group 1)", wg(U.DELETE, SEL, 1), "UNKNOWN", ("UNKNOWN",))
row(S, "member DELETE while in a group (member 10)", wm(U.DELETE, SEL, 10), "UNKNOWN", ("UNKNOWN",))

# ======================================================================== 18 indexed counter
S = "18 indexed counter"


def ctr(p: Probe, index: Optional[int] = 1, data: Optional[tuple[int, int]] = None, cid: Any = "port_counter"
        ) -> pb.CounterEntry:
    c = pb.CounterEntry(counter_id=p.ids.get(cid, cid) if isinstance(cid, str) else cid)
    if index is not None:
        c.index.index = index
    if data is not None:
        c.data.packet_count, c.data.byte_count = data
    return c


def ctr_text(index: int, data: str = "") -> str:
    idx = f"index: {index} " if index else ""
    return f'counter_entry {{ counter_id: 318731500 index {{ {idx}}} data {{{" " + data + " " if data else " "}}} }}'


row(S, "Read index 1", lambda p: p.read(ent(counter_entry=ctr(p))), check=is_texts(ctr_text(1)))
row(S, "Read wildcard (no index)", lambda p: p.read(ent(counter_entry=ctr(p, None))), check=count(64, ctr_text(0)))
row(S, "Read all counters (counter_id 0)", lambda p: p.read(ent(counter_entry=pb.CounterEntry())),
    check=count(64, ctr_text(0)))
row(S, "MODIFY index 1 (5 pkts, 500 bytes)", lambda p: p.write(upd(U.MODIFY, counter_entry=ctr(p, 1, (5, 500)))))
row(S, "Read index 1 after MODIFY", lambda p: p.read(ent(counter_entry=ctr(p))),
    check=is_texts(ctr_text(1, "byte_count: 500 packet_count: 5")))
row(S, "MODIFY index 1 without data", lambda p: p.write(upd(U.MODIFY, counter_entry=ctr(p, 1))))
row(S, "Read index 1 after MODIFY without data", lambda p: p.read(ent(counter_entry=ctr(p))), check=is_texts(ctr_text(1)))
row(S, "MODIFY index 64 (out of range, size 64)", lambda p: p.write(upd(U.MODIFY, counter_entry=ctr(p, 64, (1, 1)))),
    "UNKNOWN", ("UNKNOWN",))
row(S, "Read index 64 (out of range)", lambda p: p.read(ent(counter_entry=ctr(p, 64))), "UNKNOWN")
row(S, "INSERT index 2", lambda p: p.write(upd(U.INSERT, counter_entry=ctr(p, 2, (1, 1)))), "UNKNOWN", IA)
row(S, "DELETE index 2", lambda p: p.write(upd(U.DELETE, counter_entry=ctr(p, 2))))
row(S, "MODIFY without index (wildcard write)", lambda p: p.write(upd(U.MODIFY, counter_entry=ctr(p, None, (1, 1)))),
    "UNKNOWN", ("UNIMPLEMENTED",))
row(S, "Read unknown counter id", lambda p: p.read(ent(counter_entry=ctr(p, 1, cid=0x12ffffff))), "INVALID_ARGUMENT")

# ======================================================================== 19 indexed meter
S = "19 indexed meter"


def mtr(p: Probe, index: Optional[int] = 1, config: Optional[tuple[int, int, int, int]] = None) -> pb.MeterEntry:
    m = pb.MeterEntry(meter_id=p.ids["port_meter"])
    if index is not None:
        m.index.index = index
    if config is not None:
        m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = config
    return m


row(S, "Read index 1 (never configured)", lambda p: p.read(ent(meter_entry=mtr(p))),
    check=is_texts("meter_entry { meter_id: 350933998 index { index: 1 } }"))
row(S, "MODIFY index 1 cir=1000 cburst=100 pir=2000 pburst=200",
    lambda p: p.write(upd(U.MODIFY, meter_entry=mtr(p, 1, (1000, 100, 2000, 200)))))
row(S, "Read index 1 after MODIFY", lambda p: p.read(ent(meter_entry=mtr(p))), check=is_texts(
    "meter_entry { meter_id: 350933998 index { index: 1 } config { cir: 1000 cburst: 100 pir: 2000 pburst: 200 } }"))
row(S, "Read wildcard (no index)", lambda p: p.read(ent(meter_entry=mtr(p, None))),
    check=count(64, "meter_entry { meter_id: 350933998 index { } }"))
row(S, "MODIFY index 64 (out of range, size 64)", lambda p: p.write(upd(U.MODIFY, meter_entry=mtr(p, 64, (1000, 100, 2000, 200)))),
    "UNKNOWN", ("UNKNOWN",))
row(S, "MODIFY cir > pir", lambda p: p.write(upd(U.MODIFY, meter_entry=mtr(p, 1, (2000, 100, 1000, 200)))),
    "UNKNOWN", ("UNKNOWN",))
row(S, "MODIFY index 1 without config (reset)", lambda p: p.write(upd(U.MODIFY, meter_entry=mtr(p, 1))))
row(S, "Read index 1 after reset", lambda p: p.read(ent(meter_entry=mtr(p))),
    check=is_texts("meter_entry { meter_id: 350933998 index { index: 1 } }"))
row(S, "INSERT index 2", lambda p: p.write(upd(U.INSERT, meter_entry=mtr(p, 2, (1000, 100, 2000, 200)))), "UNKNOWN", IA)
row(S, "MODIFY without index (wildcard write)",
    lambda p: p.write(upd(U.MODIFY, meter_entry=mtr(p, None, (1000, 100, 2000, 200)))), "UNKNOWN", ("UNIMPLEMENTED",))

# ======================================================================== 20 register
S = "20 register"


def reg(p: Probe, index: Optional[int] = 1, value: Optional[int] = None) -> pb.RegisterEntry:
    e = pb.RegisterEntry(register_id=p.ids["reg"])
    if index is not None:
        e.index.index = index
    if value is not None:
        e.data.bitstring = bytes([value])
    return e


UI = ("UNIMPLEMENTED",)
row(S, "Read index 1", lambda p: p.read(ent(register_entry=reg(p))), "UNIMPLEMENTED")
row(S, "Read wildcard (no index)", lambda p: p.read(ent(register_entry=reg(p, None))), "UNIMPLEMENTED")
row(S, "MODIFY index 1 = 0x2a", lambda p: p.write(upd(U.MODIFY, register_entry=reg(p, 1, 0x2a))), "UNKNOWN", UI)
row(S, "Read index 1 after MODIFY", lambda p: p.read(ent(register_entry=reg(p))), "UNIMPLEMENTED")
row(S, "MODIFY index 128 (out of range, size 128)", lambda p: p.write(upd(U.MODIFY, register_entry=reg(p, 128, 1))),
    "UNKNOWN", UI)
row(S, "INSERT index 2", lambda p: p.write(upd(U.INSERT, register_entry=reg(p, 2, 1))), "UNKNOWN", UI)

# ======================================================================== 21 digest entry
S = "21 digest entry"


def dig(p: Probe, list_size: int = 1, config: bool = True, did: Optional[int] = None) -> pb.DigestEntry:
    d = pb.DigestEntry(digest_id=p.ids["learn_t"] if did is None else did)
    if config:
        d.config.max_timeout_ns, d.config.max_list_size, d.config.ack_timeout_ns = 1_000_000, list_size, 1_000_000_000
    return d


row(S, "INSERT (max_timeout 1ms, max_list_size 1, ack_timeout 1s)", lambda p: p.write(upd(U.INSERT, digest_entry=dig(p))))
row(S, "INSERT duplicate", lambda p: p.write(upd(U.INSERT, digest_entry=dig(p))), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "MODIFY (max_list_size 2)", lambda p: p.write(upd(U.MODIFY, digest_entry=dig(p, 2))))
DIGEST_TEXT = ("digest_entry { digest_id: 398033514 config { max_timeout_ns: 1000000 max_list_size: 2 "
               "ack_timeout_ns: 1000000000 } }")
row(S, "Read specific", lambda p: p.read(ent(digest_entry=dig(p, config=False))), check=is_texts(DIGEST_TEXT))
row(S, "Read wildcard (digest_id 0)", lambda p: p.read(ent(digest_entry=pb.DigestEntry())), "UNIMPLEMENTED")
row(S, "DELETE", lambda p: p.write(upd(U.DELETE, digest_entry=dig(p, config=False))))
row(S, "DELETE again (missing)", lambda p: p.write(upd(U.DELETE, digest_entry=dig(p, config=False))),
    "UNKNOWN", ("NOT_FOUND",))
row(S, "MODIFY missing", lambda p: p.write(upd(U.MODIFY, digest_entry=dig(p))), "UNKNOWN", ("NOT_FOUND",))
row(S, "Read after DELETE", lambda p: p.read(ent(digest_entry=dig(p, config=False))), "NOT_FOUND")
row(S, "INSERT unknown digest id", lambda p: p.write(upd(U.INSERT, digest_entry=dig(p, did=0x18ffffff))),
    "UNKNOWN", ("NOT_FOUND",))
row(S, "INSERT without config", lambda p: p.write(upd(U.INSERT, digest_entry=dig(p, config=False))))
row(S, "INSERT again (for the packet probes)", lambda p: p.write(upd(U.INSERT, digest_entry=dig(p))))

# ======================================================================== 22 multicast / clone
S = "22 multicast / clone"


def mcast(gid: int, *replicas: tuple[int, int]) -> pb.PacketReplicationEngineEntry:
    e = pb.PacketReplicationEngineEntry()
    e.multicast_group_entry.multicast_group_id = gid
    for pt, inst in replicas:
        e.multicast_group_entry.replicas.add(egress_port=pt, instance=inst)
    return e


def clone(sid: int, *replicas: tuple[int, int], plb: int = 0, cos: int = 0) -> pb.PacketReplicationEngineEntry:
    e = pb.PacketReplicationEngineEntry()
    c = e.clone_session_entry
    c.session_id, c.packet_length_bytes, c.class_of_service = sid, plb, cos
    for pt, inst in replicas:
        c.replicas.add(egress_port=pt, instance=inst)
    return e


def wpre(utype: int, e: pb.PacketReplicationEngineEntry) -> Callable[[Probe], Outcome]:
    return lambda p: p.write(upd(utype, packet_replication_engine_entry=e))


def rpre(e: pb.PacketReplicationEngineEntry) -> Callable[[Probe], Outcome]:
    return lambda p: p.read(ent(packet_replication_engine_entry=e))


def replicas_text(kind: str, key: str, *replicas: tuple[int, int]) -> str:
    rs = " ".join(f"replicas {{ egress_port: {pt} instance: {inst} }}" for pt, inst in replicas)
    return f"packet_replication_engine_entry {{ {kind} {{ {key} {rs} }} }}"


def _mc_replicas(*want: tuple[int, int]) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:    # BMv2 orders the replicas differently: compare sets
        [e] = out.entities
        mg = e.packet_replication_engine_entry.multicast_group_entry
        assert mg.multicast_group_id == 1
        assert sorted((r.egress_port, r.instance) for r in mg.replicas) == sorted(want)
    return check


MC1 = replicas_text("multicast_group_entry", "multicast_group_id: 1", (1, 1), (2, 1))
row(S, "mcast INSERT group 1 {(1,1),(2,1)}", wpre(U.INSERT, mcast(1, (1, 1), (2, 1))))
row(S, "mcast INSERT duplicate", wpre(U.INSERT, mcast(1, (1, 1), (2, 1))), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "mcast Read specific", rpre(mcast(1)), check=is_texts(MC1))
row(S, "mcast Read wildcard (group 0)", rpre(mcast(0)), check=is_texts(MC1))
row(S, "mcast MODIFY group 1 -> {(1,1),(2,1),(3,2)}", wpre(U.MODIFY, mcast(1, (1, 1), (2, 1), (3, 2))))
row(S, "mcast Read after MODIFY", rpre(mcast(1)), check=_mc_replicas((3, 2), (1, 1), (2, 1)))
row(S, "mcast MODIFY missing group 99", wpre(U.MODIFY, mcast(99, (1, 1))), "UNKNOWN", ("NOT_FOUND",))
row(S, "mcast INSERT group 0", wpre(U.INSERT, mcast(0, (1, 1))), "UNKNOWN", IA)
row(S, "mcast INSERT duplicate replica (1,1) twice", wpre(U.INSERT, mcast(2, (1, 1), (1, 1))), "UNKNOWN", IA)
row(S, "mcast INSERT empty group 3", wpre(U.INSERT, mcast(3)))
row(S, "mcast DELETE group 1", wpre(U.DELETE, mcast(1)))
row(S, "mcast DELETE missing", wpre(U.DELETE, mcast(1)), "UNKNOWN", ("NOT_FOUND",))
CS5 = replicas_text("clone_session_entry", "session_id: 5", (3, 1))
CS5B = replicas_text("clone_session_entry", "session_id: 5", (4, 1))
row(S, "clone INSERT session 5 {(3,1)}", wpre(U.INSERT, clone(5, (3, 1))))
row(S, "clone INSERT duplicate", wpre(U.INSERT, clone(5, (3, 1))), "UNKNOWN", ("ALREADY_EXISTS",))
row(S, "clone Read specific", rpre(clone(5)), check=is_texts(CS5))
row(S, "clone Read wildcard (session 0)", rpre(clone(0)), check=is_texts(CS5))
row(S, "clone MODIFY session 5 -> {(4,1)}", wpre(U.MODIFY, clone(5, (4, 1))))
row(S, "clone Read after MODIFY", rpre(clone(5)), check=is_texts(CS5B))
row(S, "clone MODIFY session 5 -> {(4,1)}, packet_length_bytes 128", wpre(U.MODIFY, clone(5, (4, 1), plb=128)),
    "UNKNOWN", ("UNKNOWN",))
row(S, "clone Read after truncating MODIFY", rpre(clone(5)), check=is_texts(CS5B))
row(S, "clone INSERT session 8 with packet_length_bytes 64", wpre(U.INSERT, clone(8, (3, 1), plb=64)),
    "UNKNOWN", ("UNKNOWN",))
row(S, "clone INSERT class_of_service 3", wpre(U.INSERT, clone(6, (3, 1), cos=3)), "UNKNOWN", UI)
row(S, "clone INSERT 2 replicas (session 7)", wpre(U.INSERT, clone(7, (3, 1), (4, 1))))
row(S, "clone INSERT session 0", wpre(U.INSERT, clone(0, (3, 1))), "UNKNOWN", IA)
row(S, "clone DELETE session 5", wpre(U.DELETE, clone(5)))
row(S, "clone DELETE missing", wpre(U.DELETE, clone(5)), "UNKNOWN", ("NOT_FOUND",))
row(S, "PRE Read with neither group nor session set", rpre(pb.PacketReplicationEngineEntry()), "INVALID_ARGUMENT")

# ======================================================================== 23 value set
S = "23 value set"


def vs(*members: int) -> pb.ValueSetEntry:
    e = pb.ValueSetEntry(value_set_id=VALUE_SET_ID)
    for m in members:
        e.members.add().match.add(field_id=1).exact.value = m.to_bytes(2, "big")
    return e


def wvs(utype: int, *members: int) -> Callable[[Probe], Outcome]:
    return lambda p: p.write(upd(utype, value_set_entry=vs(*members)))


def rvs(p: Probe) -> Outcome:
    return p.read(ent(value_set_entry=vs()))


row(S, "MODIFY {0x1234}", wvs(U.MODIFY, 0x1234), "UNKNOWN", UI)
row(S, "Read", rvs, "UNIMPLEMENTED")
row(S, "MODIFY {0x1234, 0x5678}", wvs(U.MODIFY, 0x1234, 0x5678), "UNKNOWN", UI)
row(S, "Read after 2nd MODIFY", rvs, "UNIMPLEMENTED")
row(S, "INSERT {0x1111}", wvs(U.INSERT, 0x1111), "UNKNOWN", UI)
row(S, "DELETE", wvs(U.DELETE), "UNKNOWN", UI)
row(S, "MODIFY 5 members (size 4)", wvs(U.MODIFY, 1, 2, 3, 4, 5), "UNKNOWN", UI)
row(S, "MODIFY no members (clear)", wvs(U.MODIFY), "UNKNOWN", UI)
row(S, "Read after clear", rvs, "UNIMPLEMENTED")

# ======================================================================== 24 read misc
S = "24 read misc"


def _read_no_stream(p: Probe) -> Outcome:
    assert p.server is not None
    channel = grpc.insecure_channel(f"127.0.0.1:{p.server.port}")
    try:
        return p.read(ent(table_entry=te(p, "t_const_entries")), stub=p4runtime_pb2_grpc.P4RuntimeStub(channel))
    finally:
        channel.close()


row(S, "Read from a client with no stream / arbitration", _read_no_stream, check=is_texts(*CONST_ENTRIES))
row(S, "Read wrong device_id (7)", lambda p: p.read(ent(table_entry=te(p, "t_exact")), device_id=7), "FAILED_PRECONDITION")
row(S, "Read with no entities", lambda p: p.read(), check=count(0))
row(S, "Read with an empty Entity", lambda p: p.read(pb.Entity()), "UNKNOWN")
row(S, "Read several entity kinds in one request (t_const_entries + counter index 1)",
    lambda p: p.read(ent(table_entry=te(p, "t_const_entries")), ent(counter_entry=ctr(p))),
    check=is_texts(*CONST_ENTRIES, ctr_text(1)))
row(S, "Read ExternEntry", lambda p: p.read(ent(extern_entry=pb.ExternEntry(extern_type_id=1, extern_id=1))), "UNKNOWN")

# ======================================================================== 25 packet I/O + digest list
S = "25 packet I/O + digest list"
MD_ALL = {1: b"\x00\x00", 2: b"\x00"}


def _stream(p: Probe, client: Any, wait_s: float) -> list[str]:
    out = []
    for msg in p.drain(client, wait_s):
        kind = msg.WhichOneof("update")
        if kind == "packet":
            md = ",".join(f"id{m.metadata_id}={m.value.hex()}" for m in msg.packet.metadata)
            out.append(f"PacketIn(len={len(msg.packet.payload)}, md=[{md}])")
        elif kind == "digest":
            out.append(f"DigestList(list_id={msg.digest.list_id}, n={len(msg.digest.data)})")
        elif kind == "error":
            out.append(f"StreamError({code_pb2.Code.Name(msg.error.canonical_code)})")
        else:
            out.append(kind)
    return out


def _packet_in_round(p: Probe) -> Outcome:
    """The PacketOut; the PacketIn it comes back as (the digest it pushed is kept for the next row)."""
    p.packet_out({1: b"\x00\x00", 2: b"\x00"})
    got: list[Any] = []
    end = time.monotonic() + 3
    while time.monotonic() < end and {m.WhichOneof("update") for m in got} < {"packet", "digest"}:
        got += p.drain(p.primary, 0.1)
    p.pending_digest = got
    packets = [m.packet for m in got if m.WhichOneof("update") == "packet"]
    return Outcome("OK", value=packets[0]) if packets else Outcome("NONE")


def _is_packet_in(out: Outcome, p: Probe) -> None:
    pkt = out.value
    assert pkt.payload == PAYLOAD and len(pkt.payload) == 60
    assert [(m.metadata_id, m.value) for m in pkt.metadata] == [(1, b"\xff"), (2, b"\x00")]


def _digest_after(p: Probe) -> Outcome:
    msgs = [m for m in p.pending_digest if m.WhichOneof("update") == "digest"]
    return Outcome("OK", value=msgs[0].digest) if msgs else Outcome("NONE")


def _is_digest(out: Outcome, p: Probe) -> None:
    d = out.value
    assert d.digest_id == p.ids["learn_t"] and d.list_id == 1
    assert [text(x) for x in d.data] == [r'struct { members { bitstring: "\013" } members { bitstring: "\377" } }']
    p.last_list = d.list_id


def _ack(list_id: Optional[int]) -> Callable[[Probe], Outcome]:
    def run(p: Probe) -> Outcome:
        req = pb.StreamMessageRequest()
        req.digest_ack.digest_id = p.ids["learn_t"]
        req.digest_ack.list_id = p.last_list if list_id is None else list_id
        p.primary.send(req)  # type: ignore[union-attr]
        return Outcome("OK", value=_stream(p, p.primary, 0.7))
    return run


def _second_list(p: Probe) -> Outcome:
    p.packet_out({1: b"\x00\x01", 2: b"\x00"})
    got = _stream(p, p.primary, 1.0)
    p.second_at = time.monotonic()
    return Outcome("OK", value=got)


def _third_list(p: Probe) -> Outcome:
    time.sleep(max(0.0, 2.5 - (time.monotonic() - p.second_at)))
    p.packet_out({1: b"\x00\x01", 2: b"\x00"})
    return Outcome("OK", value=_stream(p, p.primary, 1.0))


def _po(metadata: dict[int, bytes], wait_s: float = 1.0) -> Callable[[Probe], Outcome]:
    def run(p: Probe) -> Outcome:
        p.packet_out(metadata)
        return Outcome("OK", value=_stream(p, p.primary, wait_s))
    return run


def _po_from_backup(p: Probe) -> Outcome:
    backup = p.client("backup3")
    backup.arbitrate(3)
    backup.next("arbitration")
    p.packet_out(MD_ALL, client=backup)
    return Outcome("OK", value=(_stream(p, backup, 1.0), _stream(p, p.primary, 0.1)))


def stream_is(*want: str) -> Callable[[Outcome, Probe], None]:
    def check(out: Outcome, p: Probe) -> None:
        assert out.value == list(want)
    return check


PACKET_IN = "PacketIn(len=60, md=[id1=ff,id2=00])"
row(S, "PacketOut(egress_port=0 -> pipeline to_cpu) => PacketIn on primary", _packet_in_round, check=_is_packet_in)
row(S, "DigestList on primary after the PacketOut", _digest_after, check=_is_digest)
row(S, "DigestListAck for that list", _ack(None), check=stream_is())
row(S, "DigestListAck with unknown list_id 9999", _ack(9999), check=stream_is())
row(S, "2nd PacketOut after ack: DigestList again (same learn data)?", _second_list,
    check=lambda o, p: [x for x in o.value if x.startswith("DigestList")] == ["DigestList(list_id=2, n=1)"])
row(S, "3rd PacketOut 2.5 s after the 2nd list, which was never acked (ack_timeout 1 s)", _third_list,
    check=stream_is("DigestList(list_id=3, n=1)"))
row(S, "DigestEntry DELETE (no more digests for the packet probes below)",
    lambda p: p.write(upd(U.DELETE, digest_entry=dig(p, config=False))))
row(S, "PacketOut without metadata", _po({}), check=stream_is(PACKET_IN))
row(S, "PacketOut with unknown metadata id 9", _po({**MD_ALL, 9: b"\x01"}), check=stream_is())
row(S, "PacketOut with only egress_port (no _pad)", _po({1: b"\x00\x00"}), check=stream_is(PACKET_IN))
row(S, "PacketOut egress_port=1 (port with no interface)", _po({1: b"\x00\x01", 2: b"\x00"}), check=stream_is())
row(S, "PacketOut from a backup's stream (election_id 3)", _po_from_backup, check=lambda o, p: o.value == ([], []))

# ======================================================================== 26 mastership change
S = "26 mastership change"


def _takeover(p: Probe) -> Outcome:
    old = p.primary
    out = p.arbitrate("new_primary", 100)
    old_got = [(code_pb2.Code.Name(m.arbitration.status.code), m.arbitration.election_id.low)
               for m in p.drain(old, 0.5) if m.WhichOneof("update") == "arbitration"]
    out.value = (out.value, old_got)
    return out


row(S, "arbitration: new client with election_id 100 (takes over)", _takeover,
    check=lambda o, p: o.value == (("OK", 0, 100), [("ALREADY_EXISTS", 100)]) and o.message.lower() == "is primary")
row(S, "Write from the old primary (election_id 10)",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(0x70, 6), action=("drop",))), eid=10),
    "PERMISSION_DENIED")
row(S, "Write from the new primary (election_id 100)",
    lambda p: p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ex(0x70, 6), action=("drop",))), eid=100,
                      stub=p.named["new_primary"].stub))


# ---------------------------------------------------------------- the runner
class Runner:
    """Runs the rows in order, lazily, and keeps their outcomes."""

    def __init__(self, p4info: p4info_pb2.P4Info, config: bytes, wrap: bool) -> None:
        self.probe = Probe(p4info, config, wrap)
        self.outcomes: list[Outcome] = []

    def outcome(self, i: int) -> Outcome:
        while len(self.outcomes) <= i:
            rw = ROWS[len(self.outcomes)]
            try:
                out = rw.run(self.probe)
            except Exception as e:  # noqa: BLE001 - recorded, the row's test reports it
                out = Outcome(f"EXCEPTION {type(e).__name__}: {e}")
            self.outcomes.append(out)
        return self.outcomes[i]

    def close(self) -> None:
        self.probe.close()


@pytest.fixture(scope="module")
def runners(compiled: tuple[p4info_pb2.P4Info, bytes]) -> Iterator[dict[bool, Runner]]:
    made: dict[bool, Runner] = {}

    class Lazy(dict):  # type: ignore[type-arg]
        def __missing__(self, wrap: bool) -> Runner:
            made[wrap] = self[wrap] = Runner(compiled[0], compiled[1], wrap)
            return made[wrap]
    yield Lazy()
    for rn in made.values():
        rn.close()


def _check(rw: Row, out: Outcome, p: Probe) -> None:
    assert (out.code, out.updates) == (rw.code, rw.updates), out.message
    if rw.check is not None:
        assert rw.check(out, p) is not False


@pytest.mark.parametrize("i", range(len(ROWS)), ids=[rw.id for rw in ROWS])
def test_row(runners: dict[bool, Runner], i: int) -> None:
    rn = runners[False]
    _check(ROWS[i], rn.outcome(i), rn.probe)


@pytest.mark.parametrize("i", range(PIPELINE_ROWS), ids=[rw.id for rw in ROWS[:PIPELINE_ROWS]])
def test_row_wrapped_config(runners: dict[bool, Runner], i: int) -> None:
    """The pipeline rows with every config in ``p4.tmp.P4DeviceConfig`` (BMv2 controllers' form)."""
    rn = runners[True]
    _check(ROWS[i], rn.outcome(i), rn.probe)


def test_row_count() -> None:
    """The table has 351 rows; each is pinned once above."""
    assert len(ROWS) == 351
    assert len({rw.id for rw in ROWS}) == len(ROWS)


# ---------------------------------------------------------------- the opt-in
def test_extras_turn_on_what_bmv2_lacks(compiled: tuple[p4info_pb2.P4Info, bytes]) -> None:
    """``extras=True`` (``python -m p4sim switch --p4runtime-extras``) re-enables each
    extra the default refuses as BMv2 does."""
    p = Probe(*compiled, wrap=False, extras=True)
    try:
        p.fresh_server()
        _first_primary(p)
        assert p.setfpc(Req.VERIFY_AND_COMMIT).code == "OK"
        assert p.stub.Capabilities(pb.CapabilitiesRequest()).p4runtime_api_version == "1.4.1"
        # register reads and writes
        assert p.write(upd(U.MODIFY, register_entry=reg(p, 1, 0x2a))).code == "OK"
        assert texts(p.read(ent(register_entry=reg(p)))) == [
            'register_entry { register_id: 377599325 index { index: 1 } data { bitstring: "*" } }']
        assert len(p.read(ent(register_entry=reg(p, None))).entities) == 128
        # atomic write modes
        out = p.write(ins(p, D_), ins(p, D_), atomicity=W.ROLLBACK_ON_ERROR)
        assert (out.code, out.updates) == ("UNKNOWN", ("ABORTED", "ALREADY_EXISTS"))
        assert p.read(ent(table_entry=te(p, "t_exact"))).entities == []
        assert p.write(ins(p, D_), atomicity=W.DATAPLANE_ATOMIC).code == "OK"
        # wildcard counter / meter writes
        assert p.write(upd(U.MODIFY, counter_entry=ctr(p, None, (3, 30)))).code == "OK"
        assert {e.counter_entry.data.packet_count for e in p.read(ent(counter_entry=ctr(p, None))).entities} == {3}
        assert p.write(upd(U.MODIFY, meter_entry=mtr(p, None, (1000, 100, 2000, 200)))).code == "OK"
        # clone sessions with packet_length_bytes
        assert p.write(upd(U.INSERT, packet_replication_engine_entry=clone(8, (3, 1), plb=64))).code == "OK"
        [cs] = p.read(ent(packet_replication_engine_entry=clone(8))).entities
        assert cs.packet_replication_engine_entry.clone_session_entry.packet_length_bytes == 64
        # wildcard reads: PRE, digests, direct counters of all tables
        assert len(p.read(ent(packet_replication_engine_entry=pb.PacketReplicationEngineEntry())).entities) == 1
        assert p.write(upd(U.INSERT, digest_entry=dig(p))).code == "OK"
        assert len(p.read(ent(digest_entry=pb.DigestEntry())).entities) == 1
        out = p.read(ent(direct_counter_entry=pb.DirectCounterEntry(table_entry=pb.TableEntry())))
        assert out.code == "OK" and len(out.entities) == 1
        # is_const on const entries and the const default entry
        assert all(e.table_entry.is_const for e in p.read(ent(table_entry=te(p, "t_const_entries"))).entities)
        [d] = p.read(ent(table_entry=default(p, "t_const_default"))).entities
        assert d.table_entry.is_const
        # member / group reads of a selector in one-shot mode: empty
        assert p.write(upd(U.INSERT, table_entry=te(p, "t_selector", etype(4), action=oneshot((1, 1))))).code == "OK"
        out = p.read(ent(action_profile_group=group(p, SEL, 0)), ent(action_profile_member=member(p, SEL, 0)))
        assert (out.code, out.entities) == ("OK", [])
        # a bad PacketOut is answered with a StreamError
        p.packet_out({9: b"\x01"})
        assert _stream(p, p.primary, 1.0) == ["StreamError(INVALID_ARGUMENT)"]
    finally:
        p.close()
