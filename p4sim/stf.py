"""STF packet tests, as p4c's BMv2 test harness (``backends/bmv2/bmv2stf.py``) runs them.

The grammar (exactly that runner's, every other form refused with a located error) is in
:mod:`p4sim.stf_grammar`. ``packet PORT HEX`` sends a frame, ``expect PORT [HEX][$]``
adds the next expected frame of a port (``*`` is a nibble wildcard; without ``$`` the
received frame may be longer; without data one frame of any content), ``add`` /
``setdefault`` program tables, ``mc_*`` / ``mirroring_*`` the replication engine,
``counter_*`` / ``register_*`` / ``meter_*`` the externs (as simple_switch_CLI does),
``check_counter`` checks a counter (BMv2's runner parses it but does not check it),
``wait`` does nothing (as there).

**When a packet is processed.** The harness writes each port's packets into a pcap
fifo and BMv2's pcap reader takes the earliest packet only once *every other port's*
fifo holds a later packet or is closed (at the end of the file); control-plane commands
go to simple_switch_CLI as they come. So a packet is processed with the tables as they
are when the next packet is written on every other port named by a ``packet`` or
``expect`` line, or at the end of the file: with ``packet 0 …``, ``setdefault …``,
``packet 0 …``, ``expect 6 …`` both packets see the new default (port 6 has no input,
its fifo closes at the end). :func:`release_points` computes this and p4sim replays
the file in that order. ``check_counter`` is evaluated once the packets written
before it have been processed.

Then the frames received on every port are compared with the expectations: per port,
in order; a port that received frames but has no expectation fails (on BMv2 only when
a ``packet``/``expect`` line names the port), and so do missing frames.

Example::

    >>> cmds = parse_stf("packet 0 0a0b\\nexpect 1 0a ** $\\n", "t.stf")
    >>> [c.name for c in cmds], cmds[1].args["pattern"], cmds[1].args["exact"]
    (['packet', 'expect'], '0A**', True)

    >>> result = run_stf("prog.p4", "prog.stf", [])      # doctest: +SKIP
    >>> result.passed, print(result.report())            # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from p4sim.native import make_switch
from p4sim.stf_grammar import StfCommand, StfError, parse_stf

__all__ = [
    "StfError", "StfCommand", "Expectation", "StfResult", "parse_stf", "compare_frame",
    "check_outputs", "release_points", "run_stf", "run_stf_text",
]


@dataclass(frozen=True)
class Expectation:
    """An ``expect`` line: ``pattern`` is upper-case hex with ``*`` nibble wildcards
    (None = one frame of any content, ``expect PORT`` without data).

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
    engine: str = "python"                              # the engine that ran it (p4sim.native)

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
        if not exps:
            failures.append(f"port {port}: {len(got)} packet(s) received but no expectation "
                            "(packets with no expectation must not appear)")
            continue
        for i in range(max(len(exps), len(got))):
            if i >= len(got):
                e = exps[i]
                want = "(any content)" if e.pattern is None else e.pattern + ("$" if e.exact else "")
                failures.append(f"port {port}: expected packet #{i} (line {e.line}) not received"
                                f"\n    expected: {want}")
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
def release_points(commands: list[StfCommand]) -> list[int]:
    """For each command, the index (into ``commands``; ``len(commands)`` = end of file)
    before which it takes effect on BMv2 under p4c's runner: a control-plane command at
    its own index; a packet once every other port's pcap fifo holds a later packet or is
    closed (the harness opens one fifo per port named by ``packet``/``expect``), never
    before the packet written ahead of it; a ``check_counter`` once the packets before it
    are processed. ``expect`` lines get their own index (they only register).

    Example::

        >>> cmds = parse_stf("packet 0 00\\nsetdefault t a()\\npacket 0 00\\nexpect 6")
        >>> release_points(cmds)                 # port 6 has no input: closes at the end
        [4, 1, 4, 3]
        >>> release_points(parse_stf("packet 0 00\\npacket 1 00\\nexpect 0\\nexpect 1"))
        [1, 4, 2, 3]
    """
    end = len(commands)
    ports = sorted({c.args["port"] for c in commands if c.name in ("packet", "expect")})
    points: list[int] = []
    last_packet = -1
    for i, cmd in enumerate(commands):
        if cmd.name == "packet":
            point = i
            for port in ports:
                if port != cmd.args["port"]:
                    point = max(point, next((j for j in range(i + 1, end)
                                             if commands[j].name == "packet"
                                             and commands[j].args["port"] == port), end))
            last_packet = max(last_packet, point)
            points.append(last_packet)
        elif cmd.name == "check_counter":
            points.append(max(i, last_packet))
        else:
            points.append(i)
    return points


def run_stf_text(program: Any, text: str, file: str = "<stf>", *,
                 log: Optional[Callable[[str], None]] = None,
                 clock: Optional[Callable[[], int]] = None,
                 engine: str = "python") -> StfResult:
    """Run STF ``text`` against an already loaded program (a fresh switch), in the order
    BMv2 processes it under p4c's runner (:func:`release_points`).

    ``engine``: ``python`` (the reference, with the per-packet trace), ``native`` or
    ``auto`` (:func:`p4sim.native.make_switch`; the native path writes no trace).

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

    # p4c's runner gives BMv2 the file's packets at once: each is received, and holds its
    # PHV, before the earlier ones leave, so none sees another's header fields
    if engine == "python":
        switch: Any = V1ModelSwitch(program, log=sink, clock=clock, reuse_headers=False)
    else:
        switch = make_switch(program, engine=engine, clock=clock, reuse_headers=False)
    target = StfTarget(program, notes_file=file)
    result = StfResult(passed=False, trace=trace, engine=getattr(switch, "engine", "python"))
    expected: dict[int, list[Expectation]] = {}
    received: dict[int, list[bytes]] = {}
    try:
        commands = parse_stf(text, file)
        points = release_points(commands)
        # a packet released before index r runs after the commands before r; packets and
        # checks released together keep their file order
        order = sorted(range(len(commands)), key=lambda i: (
            points[i] - (0.5 if commands[i].name in ("packet", "check_counter")
                         and points[i] > i else 0), i))
        for i in order:
            cmd = commands[i]
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
                    exc.file = file
                    if not exc.line:
                        exc.line, exc.col = cmd.line, cmd.col
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
            clock: Optional[Callable[[], int]] = None, engine: str = "python") -> StfResult:
    """Compile ``program_path`` (raises :class:`p4sim.errors.P4Error` when it does not
    compile) and run the STF file ``stf_path`` against it.

    Example::

        >>> r = run_stf("tests/p4sim/stf/basic/fwd.p4", "tests/p4sim/stf/basic/fwd.stf")  # doctest: +SKIP
        >>> r.passed                                                                       # doctest: +SKIP
        True
    """
    from p4sim.engine import load_program

    with open(stf_path, encoding="utf-8") as f:
        text = f.read()
    program = load_program(program_path, list(include_dirs or []))
    return run_stf_text(program, text, stf_path, log=log, clock=clock, engine=engine)
