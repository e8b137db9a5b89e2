"""PI's ``p4.tmp.P4DeviceConfig`` (the wrapper BMv2 controllers put around the device
config), for p4sim's P4Runtime server.

This module *is* ``p4.tmp.p4config_pb2``, so that a controller's wrapper and p4sim's are
one message class in one descriptor pool. The generated code lives once, in
``proto/p4/tmp/p4config_pb2.py`` (``make proto`` writes it from ``proto/p4/tmp/p4config.proto``,
our own .proto of PI's package ``p4.tmp`` and message). It is found:

* installed: ``make venv`` installs ``proto/`` as the pip package ``p4sim-p4tmp``, which
  puts ``p4/tmp/`` inside the ``p4runtime`` package's ``p4/`` (where PI puts it), so
  programs that never import p4sim (the P4 tutorials' ``p4runtime_lib``) import it too;
* else from this repository: ``proto/p4`` is appended to the ``p4`` package's
  ``__path__`` (the mechanism of :func:`pkgutil.extend_path`), so p4sim runs from a
  checkout whose venv lacks ``p4sim-p4tmp``.

Example::

    >>> from p4sim.p4runtime.p4config_pb2 import P4DeviceConfig
    >>> P4DeviceConfig(reassign=True, device_data=b"{}").SerializeToString()
    b'\\x08\\x01\\x1a\\x02{}'
    >>> import p4.tmp.p4config_pb2 as pi
    >>> pi.P4DeviceConfig is P4DeviceConfig
    True
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import p4

#: the repository's ``p4`` package portion (holds ``tmp/p4config_pb2.py``)
REPO_P4_DIR = Path(__file__).resolve().parent / "proto" / "p4"


def load() -> ModuleType:
    """``p4.tmp.p4config_pb2``: the installed module, else the repository's copy."""
    try:
        return importlib.import_module("p4.tmp.p4config_pb2")
    except ModuleNotFoundError as err:
        if err.name not in ("p4.tmp", "p4.tmp.p4config_pb2"):
            raise
    if str(REPO_P4_DIR) not in list(p4.__path__):
        p4.__path__.append(str(REPO_P4_DIR))
    return importlib.import_module("p4.tmp.p4config_pb2")


_pb = load()
DESCRIPTOR = _pb.DESCRIPTOR
P4DeviceConfig = _pb.P4DeviceConfig

__all__ = ["DESCRIPTOR", "P4DeviceConfig", "REPO_P4_DIR", "load"]
