"""The P4 tutorials' toolchain, shaped for p4sim: commands that stand in for ``p4c``,
``p4c-bm2-ss`` and ``simple_switch_grpc`` so that a p4lang/tutorials exercise runs with
nothing but pip (p4sim/README.md, "The P4 tutorials with nothing but pip").

* :mod:`.p4c`: ``p4sim-p4c`` (like ``p4c --target bmv2 --arch v1model``) and
  ``p4sim-p4c-bm2-ss`` (like ``p4c-bm2-ss``): write p4sim's compiled JSON and the P4Info;
* :mod:`.switch`: ``p4sim-simple-switch-grpc``, BMv2's command line on p4sim's switch;
* :mod:`.shims`: ``p4sim-tutorials-bin DIR``, the names ``p4c``, ``p4c-bm2-ss`` and
  ``simple_switch_grpc`` (and a ``sudo`` for root) in a directory to put first on PATH, for
  scripts that call those names (the tutorials' ``runptf.sh``).

The console scripts are declared in the repository's ``pyproject.toml`` (``make venv``
installs them into ``.venv/bin``).

Example::

    >>> VERSION_LINE.startswith("p4sim ")
    True
"""
from __future__ import annotations

#: what ``--version`` prints (after the command's name)
VERSION_LINE = "p4sim 0.1.0 (Astral-P4), a pure-Python v1model target shaped like BMv2's tools"
