"""One faults-scenario trial with fakes for the injector, the monitor and GOR (no root, no
switch): a miss during which GOR's switch recovery re-programmed a switch says so (a route
deleted through P4Runtime is put back by it: seen on BMv2 at load 30, issue 33), and a trial
with no recovery says nothing of it."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Optional

from scenarios import faults


class FakeMonitor:
    def __init__(self, verdict: Optional[Any]) -> None:
        self.verdicts: list[Any] = []
        self._verdict = verdict

    def wait_verdict(self, pred: Callable[[Any], bool], timeout_s: float, since: int = 0) -> Optional[Any]:
        if self._verdict is not None:
            self.verdicts.append(self._verdict)
        return self._verdict

    def wait_evaluations(self, n: int, timeout_s: float) -> bool:
        return True

    def wait_quiet(self, timeout_s: float) -> bool:
        return True


class FakeInjector:
    def __init__(self, on_inject: Callable[[], None]) -> None:
        self.on_inject = on_inject

    def inject(self, kind: str, target: str, **params: Any) -> Any:
        self.on_inject()
        return SimpleNamespace(name=f"{kind}-1", started_mono=0.0)

    def undo(self, name: str) -> None:
        pass


def gor_with(events: list[Any]) -> Any:
    return SimpleNamespace(recovery=SimpleNamespace(events=events), links_down=lambda: [],
                           wait_for=lambda pred, timeout_s: True)


def restored(switch: str, pushed: bool) -> Any:
    return SimpleNamespace(switch=switch, report=SimpleNamespace(pushed=pushed))


def test_a_miss_says_that_gor_reprogrammed_the_faulted_switch_meanwhile() -> None:
    events = [restored("s0", True)]                                   # before the trial: not counted
    gor = gor_with(events)
    inj = FakeInjector(lambda: events.extend([restored("s1", True), restored("b0r0l0", False)]))
    said: list[str] = []
    t = faults._trial(inj, FakeMonitor(None), gor, "blackhole", "route s1 10.1.1.0/24", {}, said.append)
    assert not t.exact and t.reprogrammed == ["s1"]                   # b0r0l0 was only checked
    assert "re-programmed s1" in said[-1]


def test_a_trial_without_a_recovery_says_nothing_of_it() -> None:
    verdict = SimpleNamespace(kind="blackhole", component="route s1 10.1.1.0/24", t_s=5.0,
                              confidence=0.9, evidence=["x"])
    said: list[str] = []
    t = faults._trial(FakeInjector(lambda: None), FakeMonitor(verdict), gor_with([]), "blackhole",
                      "route s1 10.1.1.0/24", {}, said.append)
    assert t.exact and t.reprogrammed == [] and "re-programmed" not in said[-1]
