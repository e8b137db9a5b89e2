"""STF packet tests, as p4c's BMv2 test harness (``bmv2stf.py``) runs them.

An STF file is a list of line commands: ``packet PORT HEX`` sends a frame,
``expect PORT [HEX][$]`` adds the next expected frame of a port (``*`` is a nibble
wildcard; without a trailing ``$`` the received frame may be longer; with no data any
number of frames is accepted on that port), ``add``/``setdefault`` program tables,
``mc_*``/``mirroring_*`` program the replication engine, ``counter_*``/``register_*``/
``meter_*``/``check_counter`` touch externs, ``wait`` is a no-op here, ``#`` starts a
comment. The file runs in order against one :class:`p4sim.v1model.switch.V1ModelSwitch`;
the frames received on every port are then compared with the expectations: per port,
in order; a port that received frames but has no expectation fails, and so do missing
frames.

Example::

    >>> cmds = parse_stf("packet 0 0a0b\\nexpect 1 0a ** $\\n", "t.stf")
    >>> [c.name for c in cmds], cmds[1].args["pattern"], cmds[1].args["exact"]
    (['packet', 'expect'], '0A**', True)

    >>> result = run_stf("prog.p4", "prog.stf", [])      # doctest: +SKIP
    >>> result.passed, print(result.report())            # doctest: +SKIP
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = [
    "StfError", "StfCommand", "Expectation", "StfResult", "parse_stf", "compare_frame",
    "run_stf", "run_stf_text",
]


class StfError(Exception):
    """A problem in an STF file or a command that cannot be carried out.

    Example::

        >>> str(StfError("unknown command 'foo'", "t.stf", 3))
        "t.stf:3: error: unknown command 'foo'"
    """

    def __init__(self, message: str, file: str = "<stf>", line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"{where}error: {self.message}"


@dataclass
class StfCommand:
    """One parsed STF line: ``name`` is the lower-case command, ``args`` its fields."""

    name: str
    args: dict[str, Any]
    line: int
    text: str


@dataclass(frozen=True)
class Expectation:
    """An ``expect`` line: ``pattern`` is upper-case hex with ``*`` nibble wildcards
    (None = any number of frames is fine on this port).

    Example::

        >>> Expectation(1, "0A**", exact=False).mismatch(b"\\x0a\\xff\\x00") is None
        True
    """

    port: int
    pattern: Optional[str]
    exact: bool = False
    line: int = 0

    def mismatch(self, frame: bytes) -> Optional[str]:
        """None when ``frame`` matches, else a short reason."""
        if self.pattern is None:
            return None
        return compare_frame(self.pattern, frame, self.exact)


_HEX = set("0123456789ABCDEF")


def compare_frame(pattern: str, frame: bytes, exact: bool = False) -> Optional[str]:
    """bmv2stf's comparison: nibble by nibble, ``*`` matches anything; the received
    frame may be longer unless ``exact``. Returns None on a match, else the reason.

    Example::

        >>> compare_frame("0A*B", bytes.fromhex("0a1b"))
        >>> compare_frame("0A*B", bytes.fromhex("0a1c"))
        'differs at nibble 3 (byte 1): expected B, received C'
        >>> compare_frame("0A", bytes.fromhex("0a1c"), exact=True)
        'received frame too long: 2 bytes, expected 1'
    """
    received = frame.hex().upper()
    if len(received) < len(pattern):
        return (f"received frame too short: {len(frame)} bytes, expected "
                f"{(len(pattern) + 1) // 2}")
    for i, want in enumerate(pattern):
        if want != "*" and want != received[i]:
            return (f"differs at nibble {i} (byte {i // 2}): expected {want}, "
                    f"received {received[i]}")
    if exact and len(received) > len(pattern):
        return (f"received frame too long: {len(frame)} bytes, expected "
                f"{(len(pattern) + 1) // 2}")
    return None


def _marked_diff(pattern: str, frame: bytes) -> str:
    """Expected and received hex with ``^`` under every differing nibble."""
    received = frame.hex().upper()
    width = max(len(pattern), len(received))
    marks = []
    for i in range(width):
        want = pattern[i] if i < len(pattern) else None
        got = received[i] if i < len(received) else None
        if want == "*" or (want is not None and want == got):
            marks.append(" ")
        elif want is None and got is None:
            marks.append(" ")
        else:
            marks.append("^")
    return (f"    expected: {pattern}\n    received: {received}\n"
            f"              {''.join(marks).rstrip()}")


# --------------------------------------------------------------------------- parsing
_NAME = r"[A-Za-z_$][\w$.\[\]]*"
_KEY_RE = re.compile(r"\s*(" + _NAME + r")\s*:\s*(\S+)")
_ACTION_RE = re.compile(r"(" + _NAME + r")\s*\((.*)\)\s*(?:=\s*(\w+))?\s*$")
_PORT_RE = re.compile(r"^\d+$")

# command -> number of integer arguments (None = at least one, a list)
_DIRECT_INT_COMMANDS: dict[str, tuple[int, bool]] = {
    # name: (fixed integer args, trailing list allowed)
    "mirroring_add": (2, False),
    "mirroring_add_mc": (2, False),
    "mirroring_delete": (1, False),
    "mirroring_get": (1, False),
    "mc_mgrp_create": (1, False),
    "mc_mgrp_destroy": (1, False),
    "mc_node_create": (1, True),
    "mc_node_update": (1, True),
    "mc_node_destroy": (1, False),
    "mc_node_associate": (2, False),
    "mc_node_dissociate": (2, False),
}


def parse_int(text: str) -> int:
    """A number as simple_switch_CLI reads it: decimal, ``0x``, ``0b``, ``0o``, a MAC
    address or a dotted IPv4 address.

    Example::

        >>> parse_int("0x10"), parse_int("0b101"), parse_int("10.0.0.1"), parse_int("00:00:00:00:00:01")
        (16, 5, 167772161, 1)
    """
    t = text.strip()
    if re.fullmatch(r"(\d{1,3}\.){3}\d{1,3}", t):
        parts = [int(p) for p in t.split(".")]
        if all(p < 256 for p in parts):
            return (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]
    if re.fullmatch(r"([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}", t):
        return int(t.replace(":", ""), 16)
    return int(t, 0) if not re.fullmatch(r"0\d+", t) else int(t, 10)


def _split_words(rest: str) -> list[str]:
    return rest.split()


def _parse_action(text: str, file: str, line: int) -> tuple[str, list[tuple[str, str]], Optional[str]]:
    m = _ACTION_RE.match(text.strip())
    if not m:
        raise StfError(f"expected an action call NAME(ARG:VALUE, ...), found {text.strip()!r}",
                       file, line)
    name, inner, handle = m.group(1), m.group(2).strip(), m.group(3)
    args: list[tuple[str, str]] = []
    if inner:
        for part in inner.split(","):
            if ":" not in part:
                raise StfError(f"action argument {part.strip()!r} must be NAME:VALUE", file, line)
            k, v = part.split(":", 1)
            args.append((k.strip(), v.strip()))
    return name, args, handle


def _parse_add(rest: str, file: str, line: int) -> dict[str, Any]:
    words = rest.split(None, 1)
    if not words:
        raise StfError("'add' needs a table name", file, line)
    table = words[0]
    body = words[1] if len(words) > 1 else ""
    priority: Optional[int] = None
    first = body.split(None, 1)
    if first and _PORT_RE.match(first[0]):
        priority = int(first[0])
        body = first[1] if len(first) > 1 else ""
    # The action call is the first NAME( not inside a key value.
    keys: list[tuple[str, str]] = []
    pos = 0
    while True:
        m = _KEY_RE.match(body, pos)
        if not m or "(" in m.group(2) or "(" in m.group(1):
            break
        keys.append((m.group(1), m.group(2)))
        pos = m.end()
    action, args, handle = _parse_action(body[pos:], file, line)
    return {"table": table, "priority": priority, "keys": keys, "action": action,
            "action_args": args, "handle": handle}


def _parse_expect_data(words: list[str], file: str, line: int) -> tuple[Optional[str], bool]:
    data = "".join(words).upper()
    exact = False
    if data.endswith("$"):
        exact = True
        data = data[:-1]
    bad = set(data) - _HEX - {"*"}
    if bad:
        raise StfError(f"invalid character(s) {''.join(sorted(bad))!r} in expected packet data",
                       file, line)
    if not data:
        return None, exact
    return data, exact


def parse_stf(text: str, file: str = "<stf>") -> list[StfCommand]:
    """Parse STF text into commands (raises :class:`StfError` on a malformed line).

    Example::

        >>> c = parse_stf("add t 10 h.f:0x0a a(p:1) = E1", "x.stf")[0]
        >>> c.args["table"], c.args["priority"], c.args["keys"], c.args["handle"]
        ('t', 10, [('h.f', '0x0a')], 'E1')
    """
    cmds: list[StfCommand] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        name = parts[0].lower()
        rest = parts[1] if len(parts) > 1 else ""
        args: dict[str, Any]
        if name in ("packet", "expect"):
            words = _split_words(rest)
            if not words or not _PORT_RE.match(words[0]):
                raise StfError(f"'{name}' needs a port number", file, lineno)
            port = int(words[0])
            if name == "packet":
                # p4c's STF runner accepts an empty packet ("packet 0" alone)
                data = "".join(words[1:])
                if len(data) % 2 and all(c in "0123456789abcdefABCDEF" for c in data):
                    # as p4c's runner: a trailing lone nibble N is the byte 0N
                    data = data[:-1] + "0" + data[-1]
                try:
                    payload = bytes.fromhex(data)
                except ValueError:
                    raise StfError(f"invalid packet data {data!r} (hex digits)",
                                   file, lineno) from None
                args = {"port": port, "data": payload}
            else:
                pattern, exact = _parse_expect_data(words[1:], file, lineno)
                args = {"port": port, "pattern": pattern, "exact": exact}
        elif name == "add":
            args = _parse_add(rest, file, lineno)
        elif name == "setdefault":
            words = rest.split(None, 1)
            if len(words) < 2:
                raise StfError("'setdefault' needs TABLE ACTION(...)", file, lineno)
            action, aargs, _ = _parse_action(words[1], file, lineno)
            args = {"table": words[0], "action": action, "action_args": aargs}
        elif name in _DIRECT_INT_COMMANDS:
            fixed, has_list = _DIRECT_INT_COMMANDS[name]
            words = rest.split()
            try:
                nums = [parse_int(w) for w in words]
            except ValueError:
                raise StfError(f"'{name}' takes integer arguments, found {rest!r}",
                               file, lineno) from None
            if len(nums) < fixed or (not has_list and len(nums) != fixed):
                raise StfError(f"'{name}' takes {fixed} integer argument(s)"
                               + (" followed by a port list" if has_list else ""), file, lineno)
            args = {"ints": nums[:fixed], "list": nums[fixed:]}
        elif name in ("counter_read", "register_read", "register_reset", "counter_reset",
                      "meter_get_rates", "counter_write", "register_write",
                      "meter_set_rates", "meter_array_set_rates"):
            words = rest.split()
            if not words:
                raise StfError(f"'{name}' needs an extern name", file, lineno)
            args = {"extern": words[0], "words": words[1:]}
        elif name == "check_counter":
            m = re.match(r"(" + _NAME + r")\s*\(\s*(\$?\w+)\s*\)\s*(.*)$", rest)
            if not m:
                raise StfError("'check_counter' needs NAME(INDEX) [packets|bytes OP VALUE]",
                               file, lineno)
            cond = m.group(3).split()
            if cond and len(cond) != 3:
                raise StfError("check_counter condition must be 'packets|bytes OP VALUE'",
                               file, lineno)
            if cond and (cond[0].lower() not in ("packets", "bytes")
                         or cond[1] not in ("==", "!=", "<", "<=", ">", ">=")):
                raise StfError(f"bad check_counter condition {' '.join(cond)!r}", file, lineno)
            args = {"counter": m.group(1), "index": m.group(2),
                    "kind": cond[0].lower() if cond else "packets",
                    "op": cond[1] if cond else "==",
                    "value": parse_int(cond[2]) if cond else 0}
        elif name == "wait":
            args = {}
        elif name == "remove":
            if rest.strip().lower() != "all":
                raise StfError("only 'remove all' is supported", file, lineno)
            args = {}
        else:
            raise StfError(f"unsupported STF command {parts[0]!r}", file, lineno)
        cmds.append(StfCommand(name, args, lineno, line))
    return cmds


# --------------------------------------------------------------------------- results
@dataclass
class StfResult:
    """Outcome of one STF run. ``failures`` is empty when every expectation matched."""

    passed: bool
    failures: list[str] = field(default_factory=list)
    received: dict[int, list[bytes]] = field(default_factory=dict)
    expected: dict[int, list[Expectation]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)     # command output (reads) and remarks
    switch_errors: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)     # switch log (when asked for)

    def report(self) -> str:
        """Human-readable summary: PASS, or every failure with expected vs received."""
        lines = ["PASS" if self.passed else "FAIL"]
        lines.extend(self.failures)
        if self.switch_errors:
            lines.append("errors while processing packets:")
            lines.extend(f"  {e}" for e in self.switch_errors)
        return "\n".join(lines)


def check_outputs(expected: dict[int, list[Expectation]],
                  received: dict[int, list[bytes]]) -> list[str]:
    """Compare received frames with expectations; returns the failure messages.

    Example::

        >>> exp = {1: [Expectation(1, "0A", line=3)]}
        >>> check_outputs(exp, {1: [b"\\x0a"], 2: [b"\\x00"]})
        ['port 2: 1 packet(s) received but no expectation (packets with no expectation must not appear)']
    """
    failures: list[str] = []
    for port in sorted(set(expected) | set(received)):
        exps = expected.get(port, [])
        got = received.get(port, [])
        if any(e.pattern is None for e in exps):
            if any(e.pattern is not None for e in exps):
                failures.append(f"port {port}: has both 'expect {port}' without data and "
                                "expectations with data")
            continue
        if not exps:
            failures.append(f"port {port}: {len(got)} packet(s) received but no expectation "
                            "(packets with no expectation must not appear)")
            continue
        for i in range(max(len(exps), len(got))):
            if i >= len(got):
                e = exps[i]
                failures.append(f"port {port}: expected packet #{i} (line {e.line}) not received"
                                f"\n    expected: {e.pattern}{'$' if e.exact else ''}")
                continue
            if i >= len(exps):
                failures.append(f"port {port}: unexpected extra packet #{i}\n"
                                f"    received: {got[i].hex().upper()}")
                continue
            e = exps[i]
            why = e.mismatch(got[i])
            if why is not None:
                failures.append(f"port {port}: packet #{i} (line {e.line}) {why}\n"
                                + _marked_diff(e.pattern or "", got[i]))
        if len(exps) != len(got):
            failures.append(f"port {port}: expected {len(exps)} packet(s), received {len(got)}")
    return failures


# --------------------------------------------------------------------------- running
def run_stf_text(program: Any, text: str, file: str = "<stf>", *,
                 log: Optional[Callable[[str], None]] = None,
                 clock: Optional[Callable[[], int]] = None) -> StfResult:
    """Run STF ``text`` against an already loaded program (a fresh switch).

    STF problems (syntax, unknown table, ...) give a failed result whose first failure
    is the :class:`StfError` text; they are not raised.
    """
    from p4sim.v1model.stf_commands import StfTarget
    from p4sim.v1model.switch import V1ModelSwitch

    trace: list[str] = []

    def sink(line: str) -> None:
        trace.append(line)
        if log is not None:
            log(line)

    switch = V1ModelSwitch(program, log=sink, clock=clock)
    target = StfTarget(program, notes_file=file)
    result = StfResult(passed=False, trace=trace)
    expected: dict[int, list[Expectation]] = {}
    received: dict[int, list[bytes]] = {}
    try:
        commands = parse_stf(text, file)
        for cmd in commands:
            if cmd.name == "packet":
                for port, frame in switch.process_packet(cmd.args["port"], cmd.args["data"]):
                    received.setdefault(port, []).append(frame)
            elif cmd.name == "expect":
                expected.setdefault(cmd.args["port"], []).append(
                    Expectation(cmd.args["port"], cmd.args["pattern"], cmd.args["exact"],
                                cmd.line))
            else:
                try:
                    note = target.execute(cmd)
                except StfError as exc:
                    exc.file, exc.line = file, cmd.line
                    raise
                if note:
                    result.notes.append(f"{file}:{cmd.line}: {note}")
    except StfError as exc:
        result.failures.append(str(exc))
    result.expected, result.received = expected, received
    result.switch_errors = list(switch.stats.errors)
    if not result.failures:
        result.failures.extend(target.check_failures)
        result.failures.extend(check_outputs(expected, received))
    result.passed = not result.failures
    return result


def run_stf(program_path: str, stf_path: str, include_dirs: Optional[list[str]] = None, *,
            log: Optional[Callable[[str], None]] = None,
            clock: Optional[Callable[[], int]] = None) -> StfResult:
    """Compile ``program_path`` (raises :class:`p4sim.errors.P4Error` when it does not
    compile) and run the STF file ``stf_path`` against it.

    Example::

        >>> r = run_stf("tests/p4sim/stf/basic/fwd.p4", "tests/p4sim/stf/basic/fwd.stf")  # doctest: +SKIP
        >>> r.passed                                                                       # doctest: +SKIP
        True
    """
    from p4sim import engine

    with open(stf_path, encoding="utf-8") as f:
        text = f.read()
    program = engine.load_program(program_path, list(include_dirs or []))
    return run_stf_text(program, text, stf_path, log=log, clock=clock)
