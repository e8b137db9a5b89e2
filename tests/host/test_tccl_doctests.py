"""The usage examples in the docstrings of TCCL's port-solver modules run and stay true
(``host.tccl.ports`` itself is checked in ``test_tccl_ports.py``)."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["portplan", "hops", "colouring", "polarisation", "crosspod"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"host.tccl.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def test_ports_still_exports_every_public_name() -> None:
    from host.tccl import ports
    for name in ports.__all__:
        assert hasattr(ports, name), name
    assert ports.split_vertices is importlib.import_module("host.tccl.colouring").split_vertices
