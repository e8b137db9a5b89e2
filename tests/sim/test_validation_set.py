"""The validation set (sim/validation/runs.yaml): schema, split, measured times, bad rows."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from sim.cli import main
from sim.topology import SimInputError
from sim.validation.dataset import DATA, iteration_flops, load_dataset, measured_iteration_s
from sim.validation.fit import fit
from sim.validation.split import fit_runs, heldout_ids, heldout_runs


@pytest.fixture(scope="module")
def ds():
    return load_dataset()


def test_every_run_cites_a_source_and_a_model(ds):
    assert len(ds.runs) >= 150 and len(ds.sources) >= 8
    for r in ds.runs:
        assert r.ref and r.source in ds.sources and ds.sources[r.source]["url"]
        assert r.model.source in ds.sources
        assert measured_iteration_s(r, ds) > 0


def test_split_is_fixed_stratified_and_at_least_a_third(ds):
    held = heldout_ids(ds)
    assert held == heldout_ids(load_dataset())
    assert len(held) >= len(ds.runs) / 3
    assert {r.source for r in heldout_runs(ds)} == {r.source for r in ds.runs}
    assert not held & {r.id for r in fit_runs(ds)}


def test_measured_time_from_each_kind_of_figure(ds):
    # NeMo prints tokens/s/GPU: 128 x 8192 tokens at 12,273 per GPU on 8 GPUs
    assert measured_iteration_s(ds.run("nemo2407-llama3-8b-8"), ds) == pytest.approx(128 * 8192 / (12273 * 8))
    # SC21 Table 1 counts FLOPs with the recomputed forward: 96 B s l h^2 (1 + s/6h + V/16lh)
    r = ds.run("narayanan21-1.7b-32")
    assert iteration_flops(r, "narayanan21") == pytest.approx(
        96 * 512 * 2048 * 24 * 2304**2 * (1 + 2048 / (6 * 2304) + 51200 / (16 * 24 * 2304)))
    # Korthikanti et al.'s MFU gives the paper's 175B iteration time (13.75 s)
    assert measured_iteration_s(ds.run("korthikanti22-175b-64"), ds) == pytest.approx(13.75, rel=0.01)


_DOC = yaml.load(DATA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _write(tmp_path: Path, mutate) -> Path:
    data = copy.deepcopy({**_DOC, "runs": _DOC["runs"][:3]})
    mutate(data)
    p = tmp_path / "runs.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["runs"][0].update(gpu="B300"), "runs[0] (narayanan21-1.7b-32).gpu: unknown GPU 'B300'"),
    (lambda d: d["runs"][0].update(gpus=33), "runs[0] (narayanan21-1.7b-32).gpus: 33 != tp x pp x cp x dp"),
    (lambda d: d["runs"][0].update(tpp=2), "runs[0].tpp: unknown field"),
    (lambda d: d["runs"][0].pop("seq"), "runs[0].seq: missing"),
    (lambda d: d["runs"][0].update(measured={"tflops_per_gpu": 137.0}), "measured.convention: one of"),
    (lambda d: d["runs"][0].update(measured={"tokens_per_s_per_gpu": -1}), "measured.tokens_per_s_per_gpu: must be"),
    (lambda d: d["runs"][0].update(measured={"speed": 3}), "measured: exactly one of"),
    (lambda d: d["runs"][0].update(model="gpt-9"), "model: unknown model 'gpt-9'"),
    (lambda d: d["runs"][1].update(id=d["runs"][0]["id"]), "runs[1].id: duplicate id"),
    (lambda d: d["models"]["mpt-1b"].update(mlp="relu"), "models.mpt-1b.mlp: gelu or swiglu"),
    (lambda d: d["models"]["mpt-1b"].update(hidden=0), "models.mpt-1b.hidden: must be an integer >= 1"),
])
def test_bad_rows_are_refused_naming_the_field(tmp_path, mutate, message):
    with pytest.raises(SimInputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]").replace("+", r"\+")):
        load_dataset(_write(tmp_path, mutate))


def test_cli_refuses_an_unknown_source(capsys):
    assert main(["validate", "--source", "nope"]) == 2
    assert "--source: unknown source 'nope'" in capsys.readouterr().err


def test_the_fit_never_takes_a_held_out_run_and_improves_the_fit_runs(ds):
    held = heldout_runs(ds)[0]
    with pytest.raises(SimInputError, match="a held-out run was given to fit on"):
        fit(ds, runs=[held], evaluations=1)
    small = [r for r in fit_runs(ds) if r.gpus == 8 and r.source == "foundry"][:2]
    rep = fit(ds, runs=small, evaluations=4)
    assert rep.after_pct <= rep.before_pct and 0 < rep.calibration.sustained["H100"] <= 1.0
