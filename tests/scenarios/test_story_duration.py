"""The story's default run length follows the fabric (issue 29): 12 s on two tiers (the
default spec's ``make run``, unchanged), :data:`scenarios.story.STORY_CORE_DURATION_S` on
a fabric with a core tier (``SPEC=topo/specs/pod2-dualport.yaml``), where GOR's 3-6 rounds
of ~2.6 s do not fit in 12 s; ``--scenario-duration-s`` still wins. No root: the command
line is parsed and the scenario runner's options captured, nothing is brought up."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import scenarios.cli as cli
from scenarios.common import DEFAULT_DURATION_S, ScenarioOptions, ScenarioResult
from scenarios.story import (STORY_CORE_DURATION_S, STORY_CORE_FLOW_RATE_PPS, STORY_FLOW_RATE_PPS,
                             story_duration_s)
from topo import build_fabric
from topo.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "topo" / "specs"


def _opts(argv: list[str], spec: str, monkeypatch: pytest.MonkeyPatch) -> ScenarioOptions:
    """The options ``make run`` (``python -m scenarios up ...``) hands the scenario on ``spec``."""
    seen: list[ScenarioOptions] = []

    def fake_run(name: str, fabric: Any, programmer: Any, state: Any, save: Any,
                 opts: ScenarioOptions) -> ScenarioResult:
        seen.append(opts)
        return ScenarioResult(0)

    monkeypatch.setattr(cli, "run_scenario", fake_run)
    args = cli.build_parser().parse_args(["up", "--cli", "no", *argv])
    fnet = SimpleNamespace(opts=SimpleNamespace(state_path=None), state=None, save_state=lambda: None)
    assert cli._runner(args, build_fabric(load_spec(SPECS / spec)), object(), fnet) == 0
    return seen[0]


@pytest.mark.parametrize("spec, scenario, want_s", [
    ("default.yaml", "default", DEFAULT_DURATION_S),         # make run: 12 s as before
    ("dualport.yaml", "default", DEFAULT_DURATION_S),        # two tiers, dual-port: 12 s
    ("pod2-dualport.yaml", "default", STORY_CORE_DURATION_S),
    ("pod2-dualport.yaml", "gor", STORY_CORE_DURATION_S),     # the story's other name
    ("pod2-dualport.yaml", "incast", DEFAULT_DURATION_S),     # other scenarios keep theirs
    ("pod2-dualport.yaml", "link-failure", DEFAULT_DURATION_S),
])
def test_the_storys_default_duration_follows_the_fabrics_tiers(
        spec: str, scenario: str, want_s: float, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _opts(["--scenario", scenario], spec, monkeypatch).duration_s == want_s


def test_the_command_line_duration_wins_on_every_fabric(monkeypatch: pytest.MonkeyPatch) -> None:
    for spec in ("default.yaml", "pod2-dualport.yaml"):
        assert _opts(["--scenario", "default", "--scenario-duration-s", "7.5"], spec,
                     monkeypatch).duration_s == 7.5


@pytest.mark.parametrize("spec, scenario, want_pps", [
    ("default.yaml", "default", STORY_FLOW_RATE_PPS),        # make run: 1500 as before
    ("pod2-dualport.yaml", "default", STORY_CORE_FLOW_RATE_PPS),
    ("pod2-dualport.yaml", "incast", 250.0),                  # scenarios.common's default
])
def test_the_storys_default_rate_is_lower_with_a_core_tier(
        spec: str, scenario: str, want_pps: float, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _opts(["--scenario", scenario], spec, monkeypatch).flow_rate_pps == want_pps
    assert _opts(["--scenario", scenario, "--scenario-flow-pps", "900"], spec,
                 monkeypatch).flow_rate_pps == 900.0


def test_the_core_tier_default_is_longer_and_the_two_tier_one_is_twelve() -> None:
    assert DEFAULT_DURATION_S == 12.0 == ScenarioOptions().duration_s
    assert STORY_CORE_DURATION_S > DEFAULT_DURATION_S
    assert story_duration_s(build_fabric(load_spec(SPECS / "pod2-dualport.yaml"))) == STORY_CORE_DURATION_S
    assert story_duration_s(build_fabric(load_spec(SPECS / "default.yaml"))) == DEFAULT_DURATION_S
