"""``p4sim-tutorials-bin DIR``: BMv2's command names in a directory, for scripts that call
them by name (the P4 tutorials' ``runptf.sh`` runs ``p4c`` and ``sudo simple_switch_grpc``).

It writes, in ``DIR``:

* ``p4c`` → ``p4sim-p4c``, ``p4c-bm2-ss`` → ``p4sim-p4c-bm2-ss``, ``simple_switch_grpc`` →
  ``p4sim-simple-switch-grpc``, and ``ptf`` → the venv's ``ptf`` (when installed):
  symbolic links to the console scripts of this Python environment. Being links, the
  switch's process name is ``simple_switch_grpc`` (what the tutorials' ``pkill
  simple_switch`` looks for), and with ``DIR`` alone on PATH every tool runs in this venv;
* with ``--sudo``, a ``sudo`` for a root shell: it runs its command with the caller's
  PATH (real sudo looks commands up in its ``secure_path`` and would never find the links
  above; a root shell in a container often has no sudo at all). As a non-root user it
  refuses and says to run the calling script as root (``sudo env PATH="$PATH" ./runptf.sh``).

The directory holds only what this command wrote; writing again replaces those entries.
Put it first on PATH only for the tutorials: it shadows a real BMv2 and p4c.

Example::

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     sorted(os.path.basename(p) for p in write_shims(d, d, with_sudo=True, check=False))
    ['p4c', 'p4c-bm2-ss', 'ptf', 'simple_switch_grpc', 'sudo']
"""
from __future__ import annotations

import argparse
import os
import sys
import sysconfig
from typing import Optional, Sequence

#: BMv2 tool name → the console script (of this environment) that stands in for it
SHIMS = {"p4c": "p4sim-p4c", "p4c-bm2-ss": "p4sim-p4c-bm2-ss",
         "simple_switch_grpc": "p4sim-simple-switch-grpc", "ptf": "ptf"}

SUDO_SHIM = """#!/bin/sh
# Written by p4sim-tutorials-bin --sudo: `sudo [-E|-H|-n|--preserve-env[=..]] [VAR=VALUE..] CMD`
# for a root shell, keeping this PATH (so that CMD may be a p4sim stand-in of this folder).
if [ "$(id -u)" -ne 0 ]; then
  echo "sudo (p4sim-tutorials-bin shim): run the calling script as root, e.g." \\
       'sudo env PATH="$PATH" ./runptf.sh' >&2
  exit 1
fi
while [ $# -gt 0 ]; do
  case "$1" in
    -E|-H|-n|-S|--preserve-env|--preserve-env=*) shift ;;
    --) shift; break ;;
    -*) echo "sudo (p4sim-tutorials-bin shim): option $1 is not supported" >&2; exit 1 ;;
    *) break ;;
  esac
done
exec env "$@"
"""


class ShimError(Exception):
    """The shims cannot be written (the message says why)."""


def default_scripts_dir() -> str:
    """Where this environment's console scripts are (``.venv/bin`` in a venv)."""
    return sysconfig.get_path("scripts")


def write_shims(directory: str, scripts_dir: Optional[str] = None, with_sudo: bool = False,
                check: bool = True) -> list[str]:
    """Write the links (and the ``sudo`` script) into ``directory``; returns their paths.

    ``check``: every console script must exist (:class:`ShimError` otherwise)."""
    scripts_dir = os.path.abspath(scripts_dir or default_scripts_dir())
    os.makedirs(directory, exist_ok=True)
    written: list[str] = []
    for name, script in SHIMS.items():
        target = os.path.join(scripts_dir, script)
        if check and script == "ptf" and not os.access(target, os.X_OK):
            continue                     # PTF not installed here: runptf.sh finds it on PATH
        if check and not os.access(target, os.X_OK):
            raise ShimError(f"{target} is missing: install this repository into the environment "
                            "first (pip install --no-deps -e ., as `make venv` does)")
        link = os.path.join(directory, name)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
        written.append(link)
    if with_sudo:
        path = os.path.join(directory, "sudo")
        with open(path, "w", encoding="utf-8") as f:
            f.write(SUDO_SHIM)
        os.chmod(path, 0o755)
        written.append(path)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``p4sim-tutorials-bin [--sudo] DIR``; prints the PATH line to use."""
    ap = argparse.ArgumentParser(prog="p4sim-tutorials-bin", description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", help="folder to write the names into (created if missing)")
    ap.add_argument("--sudo", action="store_true",
                    help="also write a sudo for root shells that keeps PATH")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        write_shims(args.directory, with_sudo=args.sudo)
    except (ShimError, OSError) as err:
        print(f"p4sim-tutorials-bin: error: {err}", file=sys.stderr)
        return 1
    print(f'export PATH="{os.path.abspath(args.directory)}:$PATH"')
    return 0


__all__ = ["SHIMS", "ShimError", "default_scripts_dir", "main", "write_shims"]
