"""The usage examples in the agent protocol's and the agent's docstrings run and stay true."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["astral_proto", "astral_proto.auth", "astral_proto.flows", "astral_proto.security",
           "astral_proto.tls", "host.agent", "host.agent.guard", "host.agent.launch",
           "host.agent.mover", "host.agent.registry_client", "host.agent.service",
           "controller.registry"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
