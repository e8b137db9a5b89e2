"""The usage examples in every module's docstrings run: each package of the repository,
module by module (``make test`` collects only ``tests/``, so this is what keeps the
examples true)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("astral_proto", "bench", "controller", "fornax", "fuzz", "host", "labs", "monitor",
            "p4sim", "p4src", "process", "sim", "scenarios", "testbed", "topo")


def _modules() -> list[str]:
    names: list[str] = []
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        names.append(pkg)
        names += [m.name for m in pkgutil.walk_packages(mod.__path__, pkg + ".")
                  if not m.name.endswith("__main__")]
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, (f"{name}: {result.failed} docstring example(s) failed; "
                                f"`pytest --doctest-modules` on its file shows which")
