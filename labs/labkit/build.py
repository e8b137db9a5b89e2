"""Compiling a lab's P4 program for p4sim (``python -m p4sim compile``) or BMv2
(``p4c-bm2-ss --p4runtime-files``), with the compiler's ``file:line:col: error: …``
messages kept intact for the student.

Example::

    >>> out = compile_program(Path("labs/01-ecmp-hashing/ecmp.p4"),      # doctest: +SKIP
    ...                       Path("build/labs/01-ecmp-hashing"), "p4sim")
    >>> out.p4info.name, out.config.name                                   # doctest: +SKIP
    ('ecmp.p4info.txtpb', 'ecmp.json')
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[2]
COMPILE_TIMEOUT_S = 300.0
TARGETS = ("p4sim", "bmv2")


class LabError(RuntimeError):
    """A lab could not be set up (not root, a tool missing, the switch did not start …)."""


class LabCompileError(LabError):
    """The student's P4 program does not compile; ``diagnostics`` is the compiler's text."""

    def __init__(self, program: Path, diagnostics: str) -> None:
        self.program = program
        self.diagnostics = diagnostics.strip()
        super().__init__(f"{program.name} does not compile:\n{self.diagnostics}")


@dataclass(frozen=True, slots=True)
class CompiledLab:
    """What the switch needs: ``p4info`` (text protobuf) and the device ``config``."""

    p4info: Path
    config: Path


def p4c_binary() -> str:
    """The BMv2 compiler: ``$P4C`` or ``p4c-bm2-ss``."""
    return os.environ.get("P4C", "p4c-bm2-ss")


def compile_program(program: Path, out_dir: Path, target: str,
                    include_dirs: Sequence[Path] = ()) -> CompiledLab:
    """Compile ``program`` into ``out_dir``; raises :class:`LabCompileError` on errors."""
    if target not in TARGETS:
        raise LabError(f"unknown target {target!r}: use one of {', '.join(TARGETS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = program.stem
    p4info, config = out_dir / f"{stem}.p4info.txtpb", out_dir / f"{stem}.json"
    incs = [a for d in include_dirs for a in ("-I", str(d))]
    if target == "p4sim":
        cmd = [sys.executable, "-m", "p4sim", "compile", str(program), *incs,
               "--p4info", str(p4info), "--config", str(config)]
    else:
        p4c = p4c_binary()
        if shutil.which(p4c) is None:
            raise LabError(f"{p4c} not found: install p4c or set P4C=/path/to/p4c-bm2-ss "
                           "(or use the default TARGET=p4sim)")
        cmd = [p4c, "--arch", "v1model", *incs, "--p4runtime-files", str(p4info),
               "-o", str(config), str(program)]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                         timeout=COMPILE_TIMEOUT_S)
    if res.returncode != 0:
        raise LabCompileError(program, res.stderr + res.stdout)
    return CompiledLab(p4info, config)
