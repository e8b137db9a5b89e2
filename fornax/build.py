"""Compile the SmartNIC program (``p4src/smartnic/smartnic.p4``) in one of its builds:
FORNAX (the default) or the software-centric baseline (``FORNAX_BASELINE``), with a
session table of the default size or another (``SESSION_TABLE_SIZE``).

A build other than the default is a two-line wrapper written under ``build/fornax/``
(``#define`` then ``#include`` of the program), so both compilers read it the same way:
``python -m p4sim compile`` (the default) or ``p4c-bm2-ss`` (``compiler="p4c"``, for
BMv2). The compiler runs as a separate process; nothing here imports p4sim.

Example::

    >>> SmartNicBuild(baseline=True, table_size=64).name
    'smartnic-baseline-64'
    >>> SmartNicBuild().name
    'smartnic'
    >>> p4info, config = SmartNicBuild().compile()                       # doctest: +SKIP
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "p4src" / "smartnic" / "smartnic.p4"
BUILD_DIR = REPO / "build" / "fornax"
COMPILE_TIMEOUT_S = 300.0


class BuildError(RuntimeError):
    """The program did not compile; the message holds the compiler's diagnostics."""


@dataclass(frozen=True, slots=True)
class SmartNicBuild:
    """One build of the program: ``baseline`` (software-centric), ``table_size`` (None:
    the program's default, 2^18)."""

    baseline: bool = False
    table_size: Optional[int] = None

    @property
    def name(self) -> str:
        """A file-name stem for this build."""
        parts = ["smartnic"] + (["baseline"] if self.baseline else []) + \
            ([str(self.table_size)] if self.table_size else [])
        return "-".join(parts)

    def source(self, out_dir: Path = BUILD_DIR) -> Path:
        """The file to compile: the program itself, or a wrapper that defines the build."""
        if not self.baseline and not self.table_size:
            return PROGRAM
        lines = []
        if self.baseline:
            lines.append("#define FORNAX_BASELINE 1")
        if self.table_size:
            if self.table_size < 1:
                raise BuildError(f"table size {self.table_size}: must be at least 1")
            lines.append(f"#define SESSION_TABLE_SIZE {int(self.table_size)}")
        lines.append(f'#include "{PROGRAM}"')
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{self.name}.p4"
        text = "\n".join(lines) + "\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        return path

    def compile(self, out_dir: Path = BUILD_DIR, compiler: str = "p4sim",
                p4c: str = "p4c-bm2-ss") -> tuple[Path, Path]:
        """(P4Info text file, device config) of this build, compiled with p4sim (a config
        p4sim loads) or p4c-bm2-ss (BMv2's JSON). Raises :class:`BuildError`."""
        out_dir.mkdir(parents=True, exist_ok=True)
        src = self.source(out_dir)
        suffix = "" if compiler == "p4sim" else "-bmv2"
        p4info = out_dir / f"{self.name}{suffix}.p4info.txtpb"
        config = out_dir / f"{self.name}{suffix}.json"
        if compiler == "p4sim":
            cmd = [sys.executable, "-m", "p4sim", "compile", str(src), "--p4info", str(p4info),
                   "--config", str(config)]
        elif compiler == "p4c":
            if shutil.which(p4c) is None and not Path(p4c).exists():
                raise BuildError(f"{p4c} not found (BMv2's compiler; or compile with p4sim)")
            cmd = [p4c, "--arch", "v1model", "--p4runtime-files", str(p4info), "-o",
                   str(config), str(src)]
        else:
            raise BuildError(f"unknown compiler {compiler!r} (p4sim or p4c)")
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise BuildError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                             f"{proc.stderr.strip() or proc.stdout.strip()}")
        return p4info, config


__all__ = ["BUILD_DIR", "BuildError", "PROGRAM", "SmartNicBuild"]
