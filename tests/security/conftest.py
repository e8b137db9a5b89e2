"""Fixtures of the live data-plane attacks (root, Mininet): ``tb``, the default testbed up on
p4sim with TLS, once per test module, torn down after it (its state file gone)."""
from __future__ import annotations

from typing import Iterator

import pytest

from testbed.traffic import LiveTestbed
from testbed.traffic import testbed_up as _up     # test* names: not pytest's to collect


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTestbed]:
    """The live testbed of one module (its tests skip themselves where none can start)."""
    tmp = tmp_path_factory.mktemp("live")
    with _up(log_dir=tmp / "logs", state_path=tmp / "state.json") as live:
        yield live
    assert not (tmp / "state.json").exists()
