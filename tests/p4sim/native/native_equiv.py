"""Helpers of the native-path equivalence tests: run one thing on both engines and say
every difference (frames, counts, errors, registers, counters, table entries' direct
counters and hit times, digests).

Example::

    >>> clock = StepClock(); clock(), clock()
    (7, 14)
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Optional

from p4sim.engine import load_program

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class StepClock:
    """A deterministic switch clock: every reading is 7 µs after the previous one, so both
    engines see the same times only if they read the clock at the same points."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 7
        return self.now


def state_snapshot(program: Any) -> dict[str, Any]:
    """Everything the data plane can change in ``program.state``, comparable with ==."""
    st = program.state
    return {
        "registers": {n: list(r._cells) for n, r in st.registers.items()},
        "counters": {n: (list(c._packets), list(c._bytes)) for n, c in st.counters.items()},
        "entries": {n: [(e.handle, e.counter.read() if e.counter is not None else None, e.last_hit_ns)
                        for e in t.entries()] for n, t in st.tables.items()},
        "digests": list(st.digests._pending),
    }


def diff_snapshots(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Human-readable differences between two :func:`state_snapshot` results."""
    out = []
    for kind in a:
        if a[kind] == b[kind]:
            continue
        if isinstance(a[kind], dict):
            for name in sorted(set(a[kind]) | set(b[kind])):
                if a[kind].get(name) != b[kind].get(name):
                    out.append(f"{kind} {name}: python {str(a[kind].get(name))[:200]} != native {str(b[kind].get(name))[:200]}")
        else:
            out.append(f"{kind}: python {str(a[kind])[:300]} != native {str(b[kind])[:300]}")
    return out


def load_pair(path: str, include_dirs: Iterable[str], seed: int = 11) -> tuple[Any, Any]:
    """The program loaded twice (one per engine), with the same random seed."""
    inc = list(include_dirs)
    return load_program(path, inc, seed=seed), load_program(path, inc, seed=seed)


class Prebuilt:
    """What :func:`prebuild` made of one program: ``reason`` (None when it runs natively,
    else why not) and ``program`` (loaded with ``seed``, its native code built, never run)."""

    def __init__(self, reason: Optional[str], program: Any = None) -> None:
        self.reason = reason
        self.program = program


def prebuild(paths: Iterable[tuple[str, list[str]]], seed: int = 11) -> dict[str, Prebuilt]:
    """Load, translate and compile the programs in parallel (the compiler runs as
    processes, so threads overlap them)."""
    from p4sim.native import native_reason

    def one(item: tuple[str, list[str]]) -> tuple[str, Prebuilt]:
        path, inc = item
        try:
            prog = load_program(path, inc, seed=seed)
        except Exception as exc:   # a program p4sim refuses: not this test's business
            return path, Prebuilt(f"does not load: {exc}")
        return path, Prebuilt(native_reason(prog), prog)

    workers = max(2, min(8, (os.cpu_count() or 2) + 1))
    with ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, list(paths)))


def compare_runs(run: Callable[[Any, str], Any], a: Any, b: Any) -> list[str]:
    """``run(program, engine)`` on both engines; the differences (empty when equal)."""
    ra = run(a, "python")
    rb = run(b, "native")
    diffs = [] if ra == rb else [f"results differ:\n  python {str(ra)[:600]}\n  native {str(rb)[:600]}"]
    return diffs + diff_snapshots(state_snapshot(a), state_snapshot(b))


def note(msg: str) -> None:
    print(msg, file=sys.stderr)
