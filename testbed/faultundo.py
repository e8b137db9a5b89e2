"""Undoing a fault exactly as it was recorded (:class:`Undoer`; :func:`undo_recorded`, what
teardown runs on the faults file), and the process checks the injector and the undo share: a PID is signalled only while its command line is still the
one recorded, stopped and continued states are probed (bounded) in ``/proc``.

>>> import os
>>> process_state(os.getpid()) in ("R", "S")
True
>>> same_process(os.getpid(), "not my command line")
False
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Protocol

from process import proc_cmdline
from testbed.faultbook import FaultBook, FaultError, FaultRecord, faults_path_for
from testbed.faultnet import (CUT_DROP, CUT_LINK, Endpoint, FaultNetError, delete_table,
                              link_present, mend_cut, set_link)
from testbed.faultp4rt import EntryUndo, TableWriter

STOP_TIMEOUT_S = 10.0
SIGNAL_TIMEOUT_S = 5.0


class ControllerHooks(Protocol):
    """Stopping and starting the controller (GOR runs in the scenario's process)."""

    def stop(self) -> None:
        """Stop answering (GOR's loop and registry down)."""
        ...

    def start(self) -> None:
        """Come back."""
        ...



@dataclass(frozen=True, slots=True)
class CallableHooks:
    """:class:`ControllerHooks` from two callables.

    >>> calls = []
    >>> h = CallableHooks(stop=lambda: calls.append("stop"), start=lambda: calls.append("start"))
    >>> h.stop(); h.start(); calls
    ['stop', 'start']
    """

    stop: Callable[[], None]
    start: Callable[[], None]


def process_state(pid: int) -> str:
    """The state letter of ``pid`` (``T``: stopped; ``''``: no such process)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def catches(pid: int, sig: int) -> bool:
    """True when ``pid`` has a handler for ``sig`` (``SigCgt`` of /proc/PID/status)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError):
        pass
    return False


def wait_for(cond: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``cond`` every 20 ms until true (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def same_process(pid: int, cmdline: str) -> bool:
    """True while ``pid`` is still the process recorded (its command line matches)."""
    now = proc_cmdline(pid)
    return bool(now) and now == cmdline and process_state(pid) not in ("", "Z")


def signal_step(pid: int, sig: signal.Signals) -> dict[str, Any]:
    """An undo step sending ``sig`` to ``pid`` if it is still the same process."""
    return {"op": "signal", "pid": pid, "cmdline": proc_cmdline(pid) or "", "signal": sig.name}


# ---------------------------------------------------------------------- undo
class Undoer:
    """Runs recorded undo steps: ``nft`` (delete the table by name), ``signal`` (to the
    recorded PID while its command line still matches), ``flapper`` (SIGTERM it, then
    every end up with its routes, or its drop cut's tables deleted), ``links`` (every
    interface set down up again, with its routes), ``p4rt`` (``writer.undo``), ``controller``
    (``controller.start``)."""

    def __init__(self, writer: Optional[TableWriter] = None,
                 controller: Optional[ControllerHooks] = None) -> None:
        self.writer, self.controller = writer, controller
        self.children: dict[int, "subprocess.Popen[bytes]"] = {}

    def run(self, rec: FaultRecord, strict: bool) -> list[str]:
        """Run ``rec``'s undo steps in order; one line each. ``strict``: FaultError when
        any failed (after trying them all)."""
        lines, errors = [], []
        for step in rec.undo:
            try:
                lines.append(self.step(step))
            except (FaultError, FaultNetError, OSError) as exc:
                errors.append(str(exc))
        if errors and strict:
            raise FaultError(f"undoing {rec.name}: {'; '.join(errors)}")
        return lines + errors

    def step(self, step: Mapping[str, Any]) -> str:
        """Run one undo step; what was done, in words."""
        op = step["op"]
        if op == "nft":
            return delete_table(step["table"], Endpoint.from_dict(step["endpoint"]))
        if op == "signal":
            pid, sig = int(step["pid"]), signal.Signals[step["signal"]]
            if not same_process(pid, step["cmdline"]):
                return f"pid {pid} is gone (nothing to {sig.name})"
            os.kill(pid, sig)
            if sig == signal.SIGCONT and not wait_for(lambda: process_state(pid) != "T",
                                                      SIGNAL_TIMEOUT_S):
                raise FaultError(f"pid {pid} still stopped after SIGCONT")
            return f"{sig.name} to pid {pid}"
        if op == "flapper":
            return self._stop_flapper(step)
        if op == "links":            # interfaces set down (dead_tor, dead_nic_port): up again
            ends = [Endpoint.from_dict(raw) for raw in step["ends"]]
            for ep, routes in zip(ends, step["routes"]):
                if link_present(ep):
                    set_link(ep, True, routes)
            return f"{len(ends)} interfaces up"
        if op == "p4rt":
            if self.writer is None:
                raise FaultError("this fault was written through P4Runtime: undoing it needs "
                                 "the controller's writer (FaultInjector(writer=...))")
            self.writer.undo(EntryUndo.from_dict(step["undo"]))
            return f"P4Runtime {step['undo']['op']} on {step['undo']['switch']}"
        if op == "controller":
            if self.controller is None:
                raise FaultError("controller_down: the controller's start hook is not here "
                                 "(it lives in the process that stopped it)")
            self.controller.start()
            return "controller started"
        raise FaultError(f"unknown undo step {op!r}")

    def _stop_flapper(self, step: Mapping[str, Any]) -> str:
        pid = int(step["pid"])
        if same_process(pid, step["cmdline"]):
            os.kill(pid, signal.SIGTERM)
            if not wait_for(lambda: not same_process(pid, step["cmdline"]), STOP_TIMEOUT_S):
                os.kill(pid, signal.SIGKILL)
                wait_for(lambda: not same_process(pid, step["cmdline"]), STOP_TIMEOUT_S)
        child = self.children.pop(pid, None)
        if child is not None:
            child.wait(STOP_TIMEOUT_S)
        ends = [Endpoint.from_dict(raw) for raw in step["ends"]]
        if step.get("cut", CUT_LINK) == CUT_DROP:
            # the flapper deletes its tables as it stops; a killed one may have left them
            mend_cut(str(step["table"]), ends)
            return f"flapper {pid} stopped, the cut of {len(ends)} ends mended"
        for ep, routes in zip(ends, step["routes"]):
            if link_present(ep):
                set_link(ep, True, routes)
        return f"flapper {pid} stopped, {len(ends)} ends up"


def undo_recorded(state_path: Path) -> list[str]:
    """Undo what the faults file of ``state_path`` holds, for teardown (``testbed down``,
    ``FabricNet.stop``): nft tables deleted, stopped processes continued, flappers
    stopped and links left up; P4Runtime and controller steps are skipped (the switches
    and the controller go with the teardown). The file is removed. One line per fault.

    >>> undo_recorded(Path("/nonexistent/state.json"))
    []
    """
    book = FaultBook(faults_path_for(state_path))
    if not book.path.exists():
        return []
    undoer = Undoer()
    done = []
    for rec in reversed(book.records()):
        steps = [s for s in rec.undo if s["op"] not in ("p4rt", "controller")]
        lines = undoer.run(FaultRecord(rec.name, rec.kind, rec.target, undo=steps), strict=False)
        done.append(f"undid fault {rec.name} ({rec.kind} on {rec.target})"
                    + (f": {'; '.join(lines)}" if lines else ""))
        book.remove(rec.name)
    book.discard()
    return done


__all__ = ["CallableHooks", "ControllerHooks", "SIGNAL_TIMEOUT_S", "STOP_TIMEOUT_S", "Undoer",
           "catches", "process_state", "same_process", "signal_step", "undo_recorded", "wait_for"]
