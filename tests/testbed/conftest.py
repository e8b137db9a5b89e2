"""Fixtures shared by the testbed tests: ``testbed``, one live Mininet testbed per test
module, of the module's ``SPEC`` (a topo spec file; the default fabric when the module has
none), torn down after the module with everything it recorded removed."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from testbed.traffic import LiveTestbed
from testbed.traffic import testbed_up as _up          # a test_* name: not pytest's to collect
from topo.spec import load_spec


@pytest.fixture(scope="module")
def testbed(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTestbed]:
    """The module's testbed: up (``testbed.traffic.testbed_up``), programmed and pinged;
    after the module's last test, down, its state file gone."""
    spec = getattr(request.module, "SPEC", None)
    tmp = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with _up(spec=load_spec(Path(spec)) if spec is not None else None, log_dir=tmp / "logs",
             state_path=tmp / "state.json") as tb:
        yield tb
    assert not (tmp / "state.json").exists()  # everything recorded was removed
