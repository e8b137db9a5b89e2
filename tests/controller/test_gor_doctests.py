"""The usage examples in controller/gor's docstrings run (every module of the package)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import controller.gor

MODULES = sorted(m.name for m in pkgutil.iter_modules(controller.gor.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"controller.gor.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"controller.gor.{name}: {result.failed} docstring example(s) failed"
