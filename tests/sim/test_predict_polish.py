"""What an outside user met in ``python -m sim predict`` (ux-walk, issue 31): TCCL's dual
channel sent a TP group's small all-reduce wholly to the NIC, "H100" was not a GPU, a shipped
job's comment contradicted its fields."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from predict_jobs import small
from sim.cli import main
from sim.predict.comm import CommModel
from sim.predict.gpus import PRESETS, resolve_gpu
from sim.predict.job import TrainingJob, job_from_dict, load_job
from sim.predict.predict import job_fabric, predict
from sim.topology import SimInputError

REPO = Path(__file__).resolve().parents[2]


def _tp8_tccl(sp: bool = True) -> TrainingJob:
    return job_from_dict(small(model={"layers": 2, "hidden": 4096, "heads": 32, "seq_length": 4096},
                               parallel={"tp": 8, "pp": 1, "dp": 1, "sequence_parallel": sp},
                               training={"global_batch": 4}, gpu={"preset": "H100-SXM"},
                               network={"policy": "tccl", "dual_channel": True},
                               fabric={"spec_file": "topo/specs/pod64k.yaml"}), "j.yaml")


def _percent_on_nvlink(note: str) -> float:
    assert note.startswith("dual channel: "), note
    return float(note.split(": ")[1].split(" %")[0])


def test_a_small_allreduce_inside_a_server_stays_on_nvlink() -> None:
    # ux-walk: Llama-3 70B on 512 H100s printed "tp.allreduce ... (dual channel: 0 % on NVLink)":
    # the RoCE share's 4 us latency was below NVLink's 8 us, which the collective pays either way
    j = _tp8_tccl()
    r = predict(j)
    ar = r.comm["tp.allreduce"]                      # with SP: the loss's, 8 bytes a token
    assert ar.medium == "nvlink"
    assert _percent_on_nvlink(ar.note) == 100.0
    assert ar.seconds >= j.kernels.nvlink_alpha_s


def test_the_nic_share_pays_nvlinks_latency_and_its_own() -> None:
    j = _tp8_tccl()
    jf = job_fabric(j)
    comm = CommModel(j, jf.sf, jf.placed)
    assert comm.roce.alpha_s == pytest.approx(j.kernels.nvlink_alpha_s + j.kernels.roce_alpha_s)
    for size in (8.0, 4e3, 64e3):                    # latency-bound: never on the NIC
        assert _percent_on_nvlink(comm.collective("tp", "allreduce", size).note) == 100.0
    big = comm.collective("tp", "allreduce", 256e6)  # bandwidth-bound: the NIC takes a share
    assert 50.0 < _percent_on_nvlink(big.note) < 100.0
    nvlink_only = comm.nvlink.alpha_s + 2 * 7 / 8 * 256e6 / comm.nvlink.bytes_per_s
    assert big.seconds < nvlink_only


@pytest.mark.parametrize("alias,name", [("H100", "H100-SXM"), ("h100 sxm5", "H100-SXM"), ("H100-SXM5-80GB", "H100-SXM"),
                                        ("h800", "H800"), ("H200-SXM", "H200"), ("HGX H20", "H20"),
                                        ("A100 80GB", "A100-80GB"), ("a100-sxm4-40gb", "A100-40GB"),
                                        ("H100-SXM", "H100-SXM"), ("h100-96gb-500w", "H100-96GB-500W")])
def test_the_vendors_common_names_are_accepted(alias: str, name: str) -> None:
    assert resolve_gpu(alias, "gpu.preset", "j.yaml") is PRESETS[name]
    j = job_from_dict(small(gpu={"preset": alias}), "j.yaml")
    assert j.gpu.name == name


@pytest.mark.parametrize("alias,choices", [("A100", "A100-40GB, A100-80GB"), ("a100 sxm4", "A100-40GB, A100-80GB")])
def test_an_ambiguous_name_is_refused_with_the_choices(alias: str, choices: str) -> None:
    with pytest.raises(SimInputError, match=f"j.yaml: gpu.preset: .*{alias!r} is ambiguous: say {choices}"):
        job_from_dict(small(gpu={"preset": alias}), "j.yaml")


@pytest.mark.parametrize("name", ["H100 PCIe", "B200", "V100", ""])
def test_an_unknown_gpu_lists_the_presets(name: str) -> None:
    with pytest.raises(SimInputError, match="gpu.preset: unknown GPU .*known: A100-40GB, A100-80GB, H100-SXM"):
        job_from_dict(small(gpu={"preset": name}), "j.yaml")


def test_the_llama2_jobs_comment_agrees_with_its_fields() -> None:
    path = REPO / "sim/jobs/llama2-70b-h800-1024.yaml"
    text = path.read_text()
    j = load_job(path)
    doc = yaml.safe_load(text)
    v = doc["parallel"]["virtual_stages"]
    assert j.chunks == v
    layers = doc["model"]["layers"] // (doc["parallel"]["pp"] * v)
    assert f"{v} chunks of {layers} layers per GPU" in text
    assert "2 chunks per GPU" not in text


def test_calibrate_ops_takes_the_vendors_name_and_refuses_an_ambiguous_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "k.csv"
    csv.write_text("kind,name,M,N,K,flops,bytes,phase,measured_us,heldout\n"
                   "memory,add,,,,,1000000,,10,0\nmemory,mul,,,,,2000000,,15,0\n"
                   "memory,norm,,,,,4000000,,30,1\n")
    assert main(["calibrate-ops", str(csv), "--gpu", "A100"]) == 2
    assert "--gpu: 'A100' is ambiguous: say A100-40GB, A100-80GB" in capsys.readouterr().err
    assert main(["calibrate-ops", str(csv), "--gpu", "A100 80GB", "--precision", "fp8"]) == 2
    assert "not one of A100-80GB's" in capsys.readouterr().err          # resolved, then refused
    assert main(["calibrate-ops", str(csv), "--gpu", "h100"]) == 0
