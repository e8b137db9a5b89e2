"""p4sim's native path: a program's parser, controls, tables, externs and deparser as C,
generated from the Python the engine generates (:mod:`p4sim.native.translate`), compiled
at load with the system C compiler and cached by hash (:mod:`p4sim.native.build`), run
through ctypes with the program's own runtime state (:mod:`p4sim.native.switch`).

:func:`make_switch` is the one place that chooses the engine: ``"native"`` (fail if the
program cannot run natively), ``"python"`` (the reference engine), or ``"auto"`` (native
when the program translates and a compiler is there, else Python, with one line saying
why, once per program).

Example::

    >>> from p4sim.native import engine_from_env
    >>> engine_from_env({"P4SIM_ENGINE": "python"})
    'python'
"""
from __future__ import annotations

import logging
import os
from typing import Any, Mapping, Optional

from p4sim.native.build import NativeBuildError, compiler_status
from p4sim.native.switch import NativeSwitch, native_program
from p4sim.native.translate import NativeUnsupported
from p4sim.v1model.switch import V1ModelSwitch

ENGINES = ("auto", "native", "python")
log = logging.getLogger("p4sim.native")

__all__ = ["ENGINES", "NativeBuildError", "NativeUnsupported", "compiler_status", "engine_from_env",
           "make_switch", "native_reason"]


def engine_from_env(env: Optional[Mapping[str, str]] = None) -> str:
    """The engine ``P4SIM_ENGINE`` names (auto when unset); ValueError for another name."""
    value = (env if env is not None else os.environ).get("P4SIM_ENGINE", "auto") or "auto"
    if value not in ENGINES:
        raise ValueError(f"P4SIM_ENGINE={value!r}: expected one of {', '.join(ENGINES)}")
    return value


def native_reason(program: Any) -> Optional[str]:
    """None when ``program`` runs on the native path, else why not (builds it once)."""
    try:
        native_program(program)
        return None
    except (NativeUnsupported, NativeBuildError) as exc:
        return str(exc)


def make_switch(program: Any, engine: str = "auto", **kwargs: Any) -> Any:
    """A switch for ``program``: :class:`~p4sim.native.switch.NativeSwitch` or
    :class:`~p4sim.v1model.switch.V1ModelSwitch` (same constructor arguments), as
    ``engine`` says. With ``auto`` a program that cannot run natively, or a ``log`` (the
    per-packet trace is the Python engine's), runs on Python; the reason is logged once per
    program. ``clock_start_ns`` is for the native path only (its own monotonic clock from
    that instant instead of a Python ``clock``)."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    start = kwargs.pop("clock_start_ns", None)
    if engine == "python":
        return V1ModelSwitch(program, **kwargs)
    reason = None
    if kwargs.get("log") is not None:
        reason = "a per-packet trace was asked for (the native path writes none)"
    else:
        reason = native_reason(program)
    if reason is None:
        if start is not None:      # the native clock from that instant, not a Python callable
            kwargs.pop("clock", None)
        return NativeSwitch(program, clock_start_ns=start, **kwargs)
    if engine == "native":
        raise NativeUnsupported(reason)
    if not getattr(program, "_native_fallback_said", False):
        program._native_fallback_said = True
        log.warning("p4sim: %s runs on the Python engine: %s", getattr(program, "path", "the program"), reason)
    return V1ModelSwitch(program, **kwargs)
