"""The usage examples in host.nic's docstrings run and stay true."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["frames", "dcqcn", "pfc", "rc", "counters", "qp", "io", "udphold", "cli", "sigflag", "mmsg", "native"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"host.nic.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
