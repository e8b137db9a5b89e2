"""The ``fuzz`` benchmark group: how fast the fuzz campaigns (``fuzz/``, ``make fuzz``)
push inputs through a live p4sim switch, from a bounded run of each:

* ``fuzz.frames_per_s`` — fuzz frames per second into a ``python -m p4sim switch`` running
  ``p4src/fabric.p4`` over veth pairs, probe after every batch and counter checkpoints
  included (:func:`fuzz.frames.run_frames`, :data:`FRAMES` frames; root only: not written
  otherwise, and stderr says why);
* ``fuzz.p4rt_msgs_per_s`` — mutated P4Runtime messages per second against a live switch,
  each followed by the state Read that checks it (:func:`fuzz.p4rt.run_p4rt`,
  :data:`MESSAGES` messages);
* ``fuzz.agent_calls_per_s`` — agent-protocol calls per second against a live agent and
  flow registry over mutual TLS, each checked (:func:`fuzz.agent.run_agent`, :data:`CALLS`
  calls).

A run that found something (a finding) raises :class:`~bench.results.BenchCheckError`:
the rate of a broken switch is not a figure. ``make fuzz`` (10^6 frames, 10^5 messages)
prints the same rates for the full campaigns.

Example::

    $ sudo .venv/bin/python -m bench fuzz
"""
from __future__ import annotations

import sys

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from fuzz.veths import veths_available

FRAMES = 30_000
MESSAGES = 2_000
CALLS = 2_000
SEED = 1


def _checked(result: object) -> float:
    if not getattr(result, "ok"):
        findings = getattr(result, "findings")
        raise BenchCheckError(f"fuzz {getattr(result, 'campaign')} found {len(findings)} problem(s): "
                              f"{[(f.kind, f.what) for f in findings[:3]]}")
    return float(getattr(result, "rate_per_s"))


def bench_frames(config: BenchConfig) -> dict[str, Figure]:
    """``fuzz.frames_per_s`` (see the module docstring); {} without root."""
    from fuzz.frames import run_frames  # noqa: PLC0415 — heavy: hypothesis
    why = veths_available()
    if why:
        print(f"bench fuzz.frames: skipped ({why})", file=sys.stderr)
        return {}
    return {"fuzz.frames_per_s": Figure(_checked(run_frames(SEED, FRAMES, size="bench")), "frames/s")}


def bench_p4rt(config: BenchConfig) -> dict[str, Figure]:
    """``fuzz.p4rt_msgs_per_s`` (see the module docstring)."""
    from fuzz.p4rt import run_p4rt  # noqa: PLC0415 — heavy: hypothesis
    return {"fuzz.p4rt_msgs_per_s": Figure(_checked(run_p4rt(SEED, MESSAGES, size="bench")), "msgs/s")}


def bench_agent(config: BenchConfig) -> dict[str, Figure]:
    """``fuzz.agent_calls_per_s`` (see the module docstring)."""
    from fuzz.agent import run_agent  # noqa: PLC0415 — heavy: hypothesis
    return {"fuzz.agent_calls_per_s": Figure(_checked(run_agent(SEED, CALLS, size="bench")), "calls/s")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("frames", "fuzz", bench_frames),
                                      Benchmark("p4rt", "fuzz", bench_p4rt),
                                      Benchmark("agent", "fuzz", bench_agent))
