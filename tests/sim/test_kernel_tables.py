"""Kernel efficiency from measurement: the shipped tables, the shape model, a user's own
table (time_kernels -> calibrate-ops --table -> kernels.table) and bad tables."""
from __future__ import annotations

from pathlib import Path

import pytest

from predict_jobs import small
from sim.cli import main
from sim.predict.gpus import PRESETS
from sim.predict.job import job_from_dict
from sim.predict.kernels import Kernel, KernelParams, compute_rate, kernel_time_s
from sim.predict.kerneltable import builtin_table, load_table
from sim.predict.report import kernel_sources, summary_lines
from sim.predict.predict import predict
from sim.tools.time_kernels import kernel_shapes, write_csv
from sim.topology import SimInputError

H100, A100 = PRESETS["H100-SXM"], PRESETS["A100-80GB"]


def test_measured_rows_come_back_at_their_shape() -> None:
    assert builtin_table("H100").gemm_tflops("bf16", 2048, 2048, 13312, 132).tflops == pytest.approx(794.5)
    assert builtin_table("A100").gemm_tflops("bf16", 1024, 10240, 5120, 108).tflops == pytest.approx(271.2)
    r = builtin_table("H100").gemm_tflops("fp8", 1024, 9216, 14336, 132)
    assert r.provenance == "measured" and r.tflops == pytest.approx(1402.6, rel=0.05)


def test_the_shape_model_slows_thin_and_short_gemms() -> None:
    t = builtin_table("H100")
    big = t.gemm_tflops("bf16", 8192, 8192, 8192, 132).tflops
    thin = Kernel("g", "gemm", flops=2.0 * 64 * 8192 * 8192, bytes=(2 * 64 * 8192 + 8192 * 8192) * 2.0,
                  dims=(64, 8192, 8192))
    assert t.gemm_tflops("bf16", 64, 8192, 8192, 132).tflops < 0.8 * big       # 64-row tiles
    assert kernel_time_s(thin, H100, "bf16", KernelParams(launch_s=0.0)) == pytest.approx(
        thin.bytes / (H100.hbm_Bps * 0.7))                                      # and memory-bound anyway
    assert t.gemm_tflops("bf16", 8192, 8192, 256, 132).tflops < 0.8 * big      # the K loop's fixed cost
    assert t.gemm_tflops("bf16", 256, 256, 8192, 132).tflops < 0.65 * big      # few tiles: 64-row tiles, split-K
    assert big <= H100.peak_flops("bf16") / 1e12


def test_attention_rows_and_what_is_derived() -> None:
    t = builtin_table("H100")
    assert t.attention_tflops("cudnn", "bf16", 8192, 128, True, "fwd").tflops == pytest.approx(529)
    bwd = t.attention_tflops("cudnn", "bf16", 8192, 128, True, "bwd")
    assert bwd.provenance.startswith("derived") and 0 < bwd.tflops < 529
    a = builtin_table("A100").attention_tflops("fa2", "bf16", 4096, 128, True, "fwd", other=t)
    assert a.provenance == "derived (fwd/fwdbwd of fa2 on H100)" and 150 < a.tflops < 312
    k = Kernel("attention", "attention", flops=1e12, seq=4096, head_dim=128, impl="cudnn")
    assert compute_rate(k, A100, "bf16", KernelParams()).provenance.endswith("fa2 for cudnn")


def test_the_report_says_where_each_rate_came_from() -> None:
    j = job_from_dict(small(gpu={"preset": "H100-SXM"}), "j.yaml")
    src = kernel_sources(j)
    assert set(src) == {"gemm", "attention", "memory"} and src["memory"] == {"default": sum(src["memory"].values())}
    assert any(line.startswith("kernel rates (sim/predict/kernel_tables/H100.csv)") for line in summary_lines(predict(j)))


def test_a_users_table_from_timed_kernels_is_used_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j = job_from_dict(small(gpu={"preset": "H800"}), "j.yaml")
    shapes = kernel_shapes(j)
    assert {s.name for s in shapes if s.kind == "gemm"} >= {"qkv", "fc1", "fc2.wgrad", "lm_head"}
    # a GPU that runs every GEMM at 500 TFLOP/s and attention at 300, memory at 2 TB/s
    rows = [(s, s.flops / (500e12 if s.kind == "gemm" else 300e12) if s.kind != "memory" else s.bytes / 2e12)
            for s in shapes]
    csv_path = tmp_path / "kernels.csv"
    write_csv(rows, csv_path)
    table = tmp_path / "table.csv"
    assert main(["calibrate-ops", str(csv_path), "--gpu", "H800", "--table", str(table)]) == 0
    assert "sim: wrote" in capsys.readouterr().out
    mine = job_from_dict(small(gpu={"preset": "H800"}, kernels={"table": str(table)}), "j.yaml")
    g = next(k for k in __import__("sim.predict.graph", fromlist=["x"]).layer_forward(mine, False) if k.name == "fc1")
    r = compute_rate(g, mine.gpu, "bf16", mine.kernels)
    assert r.provenance == "measured" and r.tflops == pytest.approx(500e12, rel=1e-3)


@pytest.mark.parametrize("body, message", [
    ("precision,kind,tflops\nbf17,gemm,3\n", ":2: precision: one of bf16"),
    ("precision,kind,M,N,K,tflops\nbf16,gemm,1,2,3,fast\n", ":2: tflops: not a number: 'fast'"),
    ("precision,kind,M,N,K,tflops\nbf16,gemm,1,0,3,10\n", ":2: N: must be >= 1, got 0"),
    ("precision,kind,M,N,K,tflops\nbf16,gemm,1,2,3,-1\n", ":2: tflops: must be a positive number"),
    ("precision,kind,M,N,K,tflops\nbf16,conv,1,2,3,10\n", ":2: kind: gemm or attention, got 'conv'"),
    ("precision,kind,impl,seq,head_dim,causal,phase,tflops\nbf16,attention,xformers,1,2,1,fwd,9\n",
     ":2: impl: one of fa2, fa3, cudnn"),
    ("precision,kind,impl,seq,head_dim,causal,phase,tflops\nbf16,attention,fa2,1,2,1,both,9\n", ":2: phase: fwd"),
    ("precision,tflops\nbf16,3\n", ":1: header: missing column(s) kind"),
    ("precision,kind,tflops\nbf16,gemm\n", ":2: 2 fields, the header has 3"),
    ("# nothing\n", "empty kernel table"),
])
def test_bad_tables_are_refused_naming_line_and_column(tmp_path: Path, body: str, message: str) -> None:
    p = tmp_path / "t.csv"
    p.write_text(body)
    with pytest.raises(SimInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_table(p)


def test_a_job_with_a_missing_table_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(SimInputError, match=r"j.yaml: kernels.table: .*nope.csv: cannot read"):
        job_from_dict(small(kernels={"table": str(tmp_path / "nope.csv")}), "j.yaml")
