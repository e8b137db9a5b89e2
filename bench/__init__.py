"""The project's benchmark harness (``make bench`` / ``python -m bench [GROUP ...]``).

Every benchmark is a :class:`bench.results.Benchmark` (name, group, ``run(config)``)
registered in :func:`all_benchmarks`; :func:`run_benchmarks` runs the selected groups and
merges their figures into ``build/bench.json``.

Example::

    >>> from bench import run_benchmarks
    >>> from bench.results import BenchConfig
    >>> figs = run_benchmarks(["p4sim"], BenchConfig(duration_s=0.05, runs=1),
    ...                       output="/tmp/bench.json")            # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from bench import (buffer_bench, dualport_bench, fabric_bench, fornax_bench, fuzz_bench, gor_bench, host_bench,
                   incast_bench, monitor_bench, nic_bench,
                   native_bench, p4sim_bench, security_bench, switch_bench, tccl_bench,
                   testbed_bench, topo_bench, veth_overload)
from bench.results import DEFAULT_OUTPUT, BenchConfig, Benchmark, Figure, merge_results


def all_benchmarks() -> tuple[Benchmark, ...]:
    """Every registered benchmark, in run order (add new groups here)."""
    from bench import sim as sim_bench  # noqa: PLC0415 — heavy: numpy

    return (tuple(p4sim_bench.BENCHMARKS) + tuple(switch_bench.BENCHMARKS)
            + tuple(veth_overload.BENCHMARKS) + tuple(native_bench.BENCHMARKS)
            + tuple(fabric_bench.BENCHMARKS) + tuple(buffer_bench.BENCHMARKS)
            + tuple(topo_bench.BENCHMARKS)
            + tuple(testbed_bench.BENCHMARKS) + tuple(incast_bench.BENCHMARKS)
            + tuple(tccl_bench.BENCHMARKS)
            + tuple(host_bench.BENCHMARKS) + tuple(nic_bench.BENCHMARKS)
            + tuple(dualport_bench.BENCHMARKS)
            + tuple(gor_bench.BENCHMARKS)
            + tuple(security_bench.BENCHMARKS) + tuple(fuzz_bench.BENCHMARKS)
            + tuple(sim_bench.BENCHMARKS) + tuple(monitor_bench.BENCHMARKS)
            + tuple(fornax_bench.BENCHMARKS))


def groups() -> list[str]:
    """The benchmark groups, in run order:
    ``groups() == ["p4sim", "switch", "native", "fabric", "thresholds", "topo", "testbed", "incast", "tccl", "host",
    "gor", "security", "fuzz", "sim", "monitor", "fornax"]``."""
    out: list[str] = []
    for b in all_benchmarks():
        if b.group not in out:
            out.append(b.group)
    return out


def select(names: Sequence[str] = (), target: str = "p4sim") -> list[Benchmark]:
    """The benchmarks of the given groups (or ``group.name``) that can measure ``target``;
    all of them when ``names`` is empty.

    Raises ``KeyError`` for a name that selects nothing on ``target``:

    >>> [f"{b.group}.{b.name}" for b in select(["gor"], target="bmv2")]
    ['gor.fast_loop']
    """
    benches = [b for b in all_benchmarks() if target in b.targets]
    if not names:
        return benches
    picked: list[Benchmark] = []
    for name in names:
        hits = [b for b in benches if name in (b.group, f"{b.group}.{b.name}")]
        if not hits:
            raise KeyError(name)
        picked += [b for b in hits if b not in picked]
    return picked


def run_benchmarks(names: Sequence[str] = (), config: BenchConfig = BenchConfig(),
                   output: Optional[Union[str, Path]] = DEFAULT_OUTPUT,
                   progress: Optional[Callable[[str], None]] = None,
                   failures: Optional[list[str]] = None) -> dict[str, Figure]:
    """Run the selected benchmarks; merge each one's figures into ``output`` (None: no
    file) as soon as it finishes, so a later failure loses nothing measured.

    Without ``failures`` the first error (a :class:`bench.results.BenchCheckError` among
    them) propagates. With a list, a benchmark that raises is recorded there as
    ``"GROUP.NAME: why"`` and the others go on (``make bench``).
    """
    figures: dict[str, Figure] = {}
    for b in select(names, config.target):
        if progress is not None:
            progress(f"running {b.group}.{b.name} ...")
        try:
            got = b.run(config)
        except Exception as exc:  # noqa: BLE001 — recorded, the other groups go on
            if failures is None:
                raise
            failures.append(f"{b.group}.{b.name}: {type(exc).__name__}: {exc}")
            if progress is not None:
                progress(f"bench: {failures[-1]}")
            continue
        figures.update(got)
        if output is not None and got:
            merge_results(Path(output), got)
    return figures


__all__ = ["BenchConfig", "Benchmark", "Figure", "all_benchmarks", "groups", "run_benchmarks",
           "select"]
