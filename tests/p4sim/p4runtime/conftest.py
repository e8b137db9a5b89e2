"""The ``p4info`` fixture of a P4Runtime test module: the P4Info of its ``PROGRAM``,
compiled as its ``PROGRAM_FILE``, made once per module. A module that defines a fixture
of the same name keeps its own."""
from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info


@pytest.fixture(scope="module")
def p4info(request: pytest.FixtureRequest) -> p4info_pb2.P4Info:
    module = request.module
    return build_p4info(load_program_text(module.PROGRAM, module.PROGRAM_FILE))
