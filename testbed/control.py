"""Switch control outside P4Runtime, one interface for both targets.

What P4Runtime does not carry — queue rate and depth per egress port and priority, and a
look inside a data-plane register — each target offers through its own runtime:

* **p4sim**: its control API, through p4sim's public client :mod:`p4sim.control_api` (the
  protocol is documented there; the address is the one the switch prints as
  ``p4sim switch control: HOST:PORT``);
* **bmv2**: its Thrift runtime, driven through ``simple_switch_CLI --thrift-port N`` with
  the commands on stdin (``set_queue_rate RATE_PPS [PORT [PRIORITY]]``,
  ``set_queue_depth PKTS [PORT [PRIORITY]]``, ``register_read NAME INDEX``,
  ``register_write NAME INDEX VALUE``, ``register_reset NAME``), as every BMv2 user does
  (p4lang/behavioral-model ``docs/runtime_CLI.md``). ``simple_switch_CLI`` and the Python
  packages it needs (``bm_runtime``, ``sswitch_runtime``, ``thrift``) are installed with
  BMv2; where they are missing the error says so.

**Drops no P4 counter sees** (p4sim only, :func:`off_program_drops`): a switch's traffic
manager tail-drops at a queue's depth and its ports' kernel receive rings drop when the rx
thread is not scheduled in time; neither reaches the P4 program's counters, so the
story's telemetry cannot see them (scenarios/README.md, "Per frame, by process and
symbol"). BMv2's runtime exposes neither: none is read there.

Rates are whole packets per second (BMv2's CLI takes an integer; 0 = unlimited), depths
whole packets. The controller never uses this module: GOR reaches switches only over
P4Runtime. The testbed (queue rates of the story's uplinks), the PTF suite and the labs do.

Example::

    >>> ctl = open_control("p4sim", {"control_addr": "127.0.0.1:10559"})   # doctest: +SKIP
    >>> ctl.set_queue_rate(500, port=3)                                     # doctest: +SKIP
    >>> ctl.register_read("FabricIngress.pfc.paused", 8 * 3)                 # doctest: +SKIP
    0
    >>> ctl.close()                                                         # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Sequence

from p4sim.control_api import ControlClient
from p4sim.control_api import ControlError as P4simError

BMV2_CLI_ENV = "SIMPLE_SWITCH_CLI"
CLI_TIMEOUT_S = 30.0
#: lines of simple_switch_CLI's output that mean a command failed (it exits 0 regardless)
_CLI_FAILURE = re.compile(r"^(Error|Invalid|Could not connect|Traceback|\w*Exception|\w+Error\b).*$",
                          re.MULTILINE)
_CLI_PROMPT = "RuntimeCmd: "
_REGISTER_VALUE = re.compile(r"\[(\d+)\]\s*=\s*(-?\d+)")


class ControlError(RuntimeError):
    """A control command failed or the target's runtime is unavailable (the message says
    which switch, which command and why)."""


class SwitchControl(Protocol):
    """What the testbed, the PTF suite and the labs ask of a switch outside P4Runtime."""

    target: str

    def set_queue_rate(self, rate_pps: int, port: Optional[int] = None,
                       priority: Optional[int] = None) -> None:
        """Drain rate of one queue (port and priority), of every queue of a port (no
        priority) or of every queue (neither); 0 = unlimited."""

    def set_queue_depth(self, depth_pkts: int, port: Optional[int] = None,
                        priority: Optional[int] = None) -> None:
        """Capacity in packets, with the same scoping as :meth:`set_queue_rate`."""

    def register_read(self, name: str, index: int) -> int:
        """One cell of the data-plane register ``name`` (its P4Info name)."""

    def set_line_rate(self, gbps: float, port: Optional[int] = None) -> None:
        """The line rate PAUSE quanta are timed against (one port, or every port): p4sim's
        MAC honours PFC; BMv2's has none, so there it raises :class:`ControlError`."""

    def register_reset(self, name: str) -> None:
        """Every cell of register ``name`` back to 0."""

    def pfc_watchdog(self) -> Optional[dict[str, Any]]:
        """p4sim's PFC watchdog settings (None: off; BMv2 has no PFC, so always None)."""

    def set_pfc_watchdog(self, settings: Optional[Mapping[str, Any]]) -> None:
        """Start the PFC watchdog with ``settings`` (``detection_ms``, ``restoration_ms``,
        ``action``: what :meth:`pfc_watchdog` returned) or stop it (None); BMv2 has no PFC,
        so there it raises :class:`ControlError` unless ``settings`` is None."""

    def close(self) -> None:
        """Release the connection (if any)."""


def _scope(port: Optional[int], priority: Optional[int]) -> list[str]:
    if priority is not None and port is None:
        raise ControlError("a priority needs a port")
    return [str(v) for v in (port, priority) if v is not None]


class P4simControl:
    """p4sim's control API (its public client, :mod:`p4sim.control_api`).

    >>> P4simControl("127.0.0.1:1", switch="s0")
    Traceback (most recent call last):
    testbed.control.ControlError: switch s0: p4sim control API 127.0.0.1:1: ...
    """

    target = "p4sim"

    def __init__(self, addr: str, switch: str = "") -> None:
        self.addr, self.switch = addr, switch
        try:
            self._client = ControlClient(addr)
        except OSError as exc:
            raise ControlError(f"switch {switch}: p4sim control API {addr}: {exc}") from None

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (P4simError, OSError) as exc:
            raise ControlError(f"switch {self.switch}: {what}: {exc}") from None

    def set_queue_rate(self, rate_pps: int, port: Optional[int] = None,
                       priority: Optional[int] = None) -> None:
        _scope(port, priority)
        self._call("set_queue_rate", self._client.set_queue_rate, int(rate_pps), port=port,
                   priority=priority)

    def set_queue_depth(self, depth_pkts: int, port: Optional[int] = None,
                        priority: Optional[int] = None) -> None:
        _scope(port, priority)
        self._call("set_queue_depth", self._client.set_queue_depth, int(depth_pkts),
                   port=port, priority=priority)

    def register_read(self, name: str, index: int) -> int:
        return int(self._call("register_read", self._client.register_read, name, index))

    def set_line_rate(self, gbps: float, port: Optional[int] = None) -> None:
        self._call("set_line_rate", self._client.set_line_rate, float(gbps), port=port)

    def register_reset(self, name: str) -> None:
        self._call("register_reset", self._client.register_reset, name)

    def pfc_watchdog(self) -> Optional[dict[str, Any]]:
        return self._call("pfc_watchdog", self._client.pfc_watchdog)

    def set_pfc_watchdog(self, settings: Optional[Mapping[str, Any]]) -> None:
        s = dict(settings or {})
        self._call("set_pfc_watchdog", self._client.set_pfc_watchdog, s.get("detection_ms"),
                   s.get("restoration_ms"), s.get("action", "drop"))

    def queue_stats(self, port: Optional[int] = None) -> dict[int, Any]:
        """p4sim's egress queues of one port or all: depth, PFC pause and its watchdog's
        counters per priority (:meth:`p4sim.control_api.ControlClient.queue_stats`)."""
        return self._call("queue_stats", self._client.queue_stats, port)

    def off_program_drops(self) -> "OffProgramDrops":
        """The switch's drops outside the P4 program since it started (its
        ``port_counters``)."""
        return OffProgramDrops.of(self._call("port_counters", self._client.port_counters))

    def close(self) -> None:
        self._client.close()


@dataclass(frozen=True, slots=True)
class OffProgramDrops:
    """Frames a p4sim switch dropped where no P4 counter sees them, since it started:
    ``tm_tail`` its traffic manager's queues at their depth (tail drop), ``ring`` its
    ports' kernel receive rings full (``rx_dropped``: the rx thread was not scheduled in
    time).

    >>> OffProgramDrops.of({3: {"rx_dropped": 5, "queues": [{"dropped": 2}, {"dropped": 1}]},
    ...                     4: {"queues": []}})
    OffProgramDrops(tm_tail=3, ring=5)
    >>> OffProgramDrops(1, 2).total
    3
    """

    tm_tail: int = 0
    ring: int = 0

    @property
    def total(self) -> int:
        """Both kinds together."""
        return self.tm_tail + self.ring

    @staticmethod
    def of(port_counters: Mapping[int, Mapping[str, Any]]) -> "OffProgramDrops":
        """From p4sim's ``port_counters`` (port → its counters and queues)."""
        tm = sum(int(q.get("dropped", 0)) for c in port_counters.values() for q in c.get("queues", ()))
        ring = sum(int(c.get("rx_dropped", 0)) for c in port_counters.values())
        return OffProgramDrops(tm, ring)


def off_program_drops(target: str, switches: Mapping[str, Mapping[str, Any]]
                      ) -> dict[str, OffProgramDrops]:
    """Each p4sim switch's :class:`OffProgramDrops` (``switches``: the testbed state's
    records, name → record). BMv2's runtime has no such counters: ``{}``. A switch whose
    control API does not answer is left out.

    >>> off_program_drops("bmv2", {"s0": {"thrift_port": 9090}})
    {}
    >>> off_program_drops("p4sim", {"s0": {}})
    {}
    """
    if target != "p4sim":
        return {}
    out: dict[str, OffProgramDrops] = {}
    for name, record in sorted(switches.items()):
        try:
            ctl = open_control(target, record, name)
        except ControlError:
            continue
        try:
            out[name] = ctl.off_program_drops()            # type: ignore[attr-defined]
        except ControlError:
            pass
        finally:
            ctl.close()
    return out


def bmv2_cli_binary() -> str:
    """``$SIMPLE_SWITCH_CLI``, else ``simple_switch_CLI`` (from PATH, or beside
    ``$SIMPLE_SWITCH_GRPC`` when that names a path)."""
    env = os.environ.get(BMV2_CLI_ENV)
    if env:
        return env
    ssg = os.environ.get("SIMPLE_SWITCH_GRPC", "")
    if os.sep in ssg:
        beside = Path(ssg).with_name("simple_switch_CLI")
        if beside.exists():
            return str(beside)
    return "simple_switch_CLI"


class Bmv2ThriftControl:
    """BMv2's Thrift runtime through ``simple_switch_CLI`` (one CLI run per call; several
    commands of one call share a run).

    >>> c = Bmv2ThriftControl(9191, switch="s0", cli="/nonexistent/simple_switch_CLI")
    Traceback (most recent call last):
    testbed.control.ControlError: switch s0: /nonexistent/simple_switch_CLI not found: ...
    """

    target = "bmv2"

    def __init__(self, thrift_port: int, switch: str = "", cli: Optional[str] = None,
                 thrift_ip: str = "127.0.0.1") -> None:
        self.thrift_port, self.thrift_ip, self.switch = int(thrift_port), thrift_ip, switch
        name = cli or bmv2_cli_binary()
        path = shutil.which(name)
        if path is None:
            raise ControlError(
                f"switch {switch}: {name} not found: BMv2's Thrift runtime client "
                "(simple_switch_CLI with its Python packages bm_runtime, sswitch_runtime and "
                f"thrift) is installed with BMv2; put it on PATH or set {BMV2_CLI_ENV}")
        self.cli = path

    def run(self, commands: Sequence[str]) -> str:
        """Run ``commands`` in one ``simple_switch_CLI`` session; its output, or
        ControlError with the failing line."""
        argv = [self.cli, "--thrift-port", str(self.thrift_port), "--thrift-ip", self.thrift_ip]
        try:
            res = subprocess.run(argv, input="\n".join(commands) + "\n", capture_output=True,
                                 text=True, timeout=CLI_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ControlError(f"switch {self.switch}: {' '.join(argv)}: {exc}") from None
        # the prompt precedes every command's output on one line: one line per answer
        out = (res.stdout + res.stderr).replace(_CLI_PROMPT, "\n")
        if "No module named" in out:
            missing = re.search(r"No module named '?([\w.]+)", out)
            raise ControlError(
                f"switch {self.switch}: {self.cli} cannot start: BMv2's Python runtime is "
                f"missing ({missing.group(1) if missing else 'a module'}): install BMv2's "
                "Python packages (bm_runtime, sswitch_runtime) and the thrift package for "
                "the Python that runs simple_switch_CLI")
        bad = _CLI_FAILURE.search(out)
        if res.returncode != 0 or bad is not None:
            lines = [l.strip() for l in out.splitlines() if l.strip()]
            if bad is not None and not bad.group(0).startswith("Traceback"):
                why = bad.group(0).strip()
            else:                          # a traceback's last line is the exception itself
                why = lines[-1] if lines else f"exit status {res.returncode}"
            raise ControlError(f"switch {self.switch}: simple_switch_CLI --thrift-port "
                               f"{self.thrift_port} ({'; '.join(commands)}): {why}")
        return out

    def set_queue_rate(self, rate_pps: int, port: Optional[int] = None,
                       priority: Optional[int] = None) -> None:
        self.run([" ".join(["set_queue_rate", str(int(rate_pps)), *_scope(port, priority)])])

    def set_queue_depth(self, depth_pkts: int, port: Optional[int] = None,
                        priority: Optional[int] = None) -> None:
        self.run([" ".join(["set_queue_depth", str(int(depth_pkts)),
                            *_scope(port, priority)])])

    def register_read(self, name: str, index: int) -> int:
        out = self.run([f"register_read {name} {int(index)}"])
        m = _REGISTER_VALUE.search(out)
        if m is None:
            raise ControlError(f"switch {self.switch}: register_read {name} {index}: no value "
                               f"in simple_switch_CLI's output: {out.strip()[-200:]!r}")
        return int(m.group(2))

    def register_reset(self, name: str) -> None:
        self.run([f"register_reset {name}"])

    def set_line_rate(self, gbps: float, port: Optional[int] = None) -> None:
        raise ControlError(f"switch {self.switch}: BMv2's MAC does not honour PFC frames: "
                           f"no line rate to set for their quanta")

    def pfc_watchdog(self) -> Optional[dict[str, Any]]:
        return None                          # no PFC, no watchdog

    def set_pfc_watchdog(self, settings: Optional[Mapping[str, Any]]) -> None:
        if settings is not None:
            raise ControlError(f"switch {self.switch}: BMv2's MAC does not honour PFC frames: "
                               f"no PFC watchdog to start")

    def reset_state(self) -> None:
        """BMv2's ``reset_state``: every table, register, counter and the packet
        replication engine back to empty, the P4 config kept. Needed before a pipeline is
        pushed again on a running BMv2: PI forgets its clone sessions and multicast groups
        on a push while BMv2 keeps their replicas, so a session inserted again would add
        its replica a second time (every clone then leaves twice; measured on 1.15.5)."""
        self.run(["reset_state"])

    def close(self) -> None:
        """Nothing to release: every call is its own CLI run."""


def open_control(target: str, switch_record: Mapping[str, Any], switch: str = "") -> SwitchControl:
    """The control of one switch from its testbed record (``build/testbed-state.json``'s
    ``switches[NAME]``: ``control_addr`` for p4sim, ``thrift_port`` for BMv2).

    >>> open_control("bmv2", {}, "s0")
    Traceback (most recent call last):
    testbed.control.ControlError: switch s0: no thrift port recorded (was it started by the testbed?)
    """
    if target == "p4sim":
        addr = switch_record.get("control_addr")
        if not addr:
            raise ControlError(f"switch {switch}: no p4sim control address recorded")
        return P4simControl(str(addr), switch)
    if target == "bmv2":
        port = switch_record.get("thrift_port")
        if not port:
            raise ControlError(f"switch {switch}: no thrift port recorded (was it started "
                               "by the testbed?)")
        return Bmv2ThriftControl(int(port), switch)
    raise ControlError(f"switch {switch}: unknown target {target!r}")


__all__ = ["Bmv2ThriftControl", "ControlError", "OffProgramDrops", "P4simControl", "SwitchControl",
           "bmv2_cli_binary", "off_program_drops", "open_control"]
