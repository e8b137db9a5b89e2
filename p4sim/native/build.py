"""Compile a program's generated C, cached by its hash: :mod:`p4sim.cbuild` (the build
cache, compiler check and flags, one owner for the repository) with the native path's
run-time headers (``p4sim/native/c/``) as the include folder, hashed with the C.

Example::

    >>> compiler_status()[0] in (True, False)
    True
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from p4sim import cbuild
from p4sim.cbuild import (CFLAGS, COMPILE_TIMEOUT_S, NativeBuildError, _compiler_version, cache_dir,
                          compiler_status)

C_DIR = Path(__file__).resolve().parent / "c"

__all__ = ["CFLAGS", "COMPILE_TIMEOUT_S", "C_DIR", "NativeBuildError", "build", "cache_dir", "cached_build",
           "compiler_status", "_compiler_version"]


def build(c_source: str, name_hint: str = "program") -> Path:
    """The shared object of ``c_source`` with the run-time headers (built now, or cached)."""
    return cbuild.build(c_source, name_hint, include_dir=C_DIR)


def cached_build(c_source: str) -> Optional[Path]:
    """The cached shared object of ``c_source``, None when it is not built yet."""
    return cbuild.cached_build(c_source, include_dir=C_DIR)
