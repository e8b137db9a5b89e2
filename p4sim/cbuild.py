"""Compile C with the system C compiler at load, cached by its hash: the one build cache
of the repository (p4sim's native path, ``p4sim.native.build``, and the NIC emulator's
hot loop, ``host.nic.native``, both build through it).

The shared object is ``<cache>/<sha256>.so`` where the hash covers the C, the headers of
its include folder (``p4sim/native/c/`` for programs), the compiler's ``--version`` line and the flags,
so a changed program, run-time or compiler never reuses a stale build. The cache is
``$P4SIM_NATIVE_CACHE``, else ``$XDG_CACHE_HOME/p4sim/native``, else
``~/.cache/p4sim/native``; a build is written to a temporary name and renamed, so
processes building the same program at once do not see half a file.

The generated C uses GCC's nested functions (the engine's Python nests its actions and
parser states inside their control or parser), so the compiler must be GCC (Debian's
``gcc``, what ``cc`` is there); another compiler is reported as unavailable.

Exported functions need ``__attribute__((visibility("default")))`` (the flags hide the
rest).

Example::

    >>> compiler_status()[0] in (True, False)
    True
    >>> so = build("__attribute__((visibility(\"default\"))) int two(void) { return 2; }", "two")  # doctest: +SKIP
    >>> ctypes.CDLL(str(so)).two()                                                    # doctest: +SKIP
    2
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

CFLAGS = ("-shared", "-fPIC", "-fwrapv", "-fvisibility=hidden", "-fno-strict-aliasing",
          "-Wno-unused-label", "-Wno-unused-variable", "-Wno-unused-function")
COMPILE_TIMEOUT_S = 300


class NativeBuildError(Exception):
    """The C compiler failed or is not there (the message says which)."""


def cache_dir() -> Path:
    env = os.environ.get("P4SIM_NATIVE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "p4sim" / "native"


def _cflags() -> tuple[str, ...]:
    """The flags: ``$P4SIM_NATIVE_OPT`` (default ``-O2``) and :data:`CFLAGS`."""
    return (os.environ.get("P4SIM_NATIVE_OPT", "-O2"), *CFLAGS)


def _compiler() -> str:
    return os.environ.get("CC", "cc")


@lru_cache(maxsize=None)
def _compiler_version(cc: str) -> tuple[bool, str]:
    path = shutil.which(cc)
    if path is None:
        return False, f"no C compiler ({cc!r} not found; Debian: apt-get install gcc)"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"the C compiler {cc!r} does not run ({exc})"
    first = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    if "gcc" not in first.lower() and "free software foundation" not in out.stdout.lower():
        return False, f"the C compiler {cc!r} is not GCC ({first!r}); the generated C needs GCC's nested functions"
    return True, first


def compiler_status() -> tuple[bool, str]:
    """``(True, version line)`` when GCC is there, else ``(False, why)``."""
    return _compiler_version(_compiler())


def _headers_text(include_dir: Optional[Path]) -> str:
    return "".join(p.read_text() for p in sorted(include_dir.glob("*.h"))) if include_dir else ""


def _key(c_source: str, include_dir: Optional[Path], version: str) -> str:
    text = "\0".join([c_source, _headers_text(include_dir), version, " ".join(_cflags())])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def build(c_source: str, name_hint: str = "program", include_dir: Optional[Path] = None) -> Path:
    """The shared object of ``c_source`` (built now, or found in the cache);
    ``include_dir``: the folder of its headers (``-I``, hashed with it).
    :class:`NativeBuildError` when there is no GCC or it fails."""
    ok, version = compiler_status()
    if not ok:
        raise NativeBuildError(version)
    key = _key(c_source, include_dir, version)
    d = cache_dir()
    so = d / f"{key}.so"
    if so.exists():
        return so
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp_c = tempfile.mkstemp(prefix=f"{key}.", suffix=".c", dir=d)
    with os.fdopen(fd, "w") as f:
        f.write(f"/* p4sim native path: {name_hint} */\n#include <stddef.h>\n")
        f.write(c_source)
    tmp_so = tmp_c[:-2] + ".so"
    inc = ["-I", str(include_dir)] if include_dir else []
    cmd = [shutil.which(_compiler()) or _compiler(), *_cflags(), *inc, "-o", tmp_so, tmp_c]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _unlink(tmp_c)
        _unlink(tmp_so)  # a killed compiler may have left a partial object behind
        raise NativeBuildError(f"the C compiler took more than {COMPILE_TIMEOUT_S} s") from None
    if res.returncode != 0:
        _unlink(tmp_so)
        keep = Path(tmp_c).with_suffix(".failed.c")
        os.replace(tmp_c, keep)
        first = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr.strip()[:300])
        raise NativeBuildError(f"the C compiler failed ({first}; source kept in {keep})")
    os.replace(tmp_so, so)
    os.replace(tmp_c, d / f"{key}.c")
    return so


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def cached_build(c_source: str, include_dir: Optional[Path] = None) -> Optional[Path]:
    """The cached shared object of ``c_source``, None when it is not built yet."""
    ok, version = compiler_status()
    if not ok:
        return None
    key = _key(c_source, include_dir, version)
    so = cache_dir() / f"{key}.so"
    return so if so.exists() else None
