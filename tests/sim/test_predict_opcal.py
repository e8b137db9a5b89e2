"""``python -m sim calibrate-ops``: the efficiency factors recovered from synthetic
measurements (generated here from known factors: no real GPU measured), the CSV and
PyTorch-profiler trace readers, bad input, the fitted section usable in a job file."""
from __future__ import annotations

import gzip
import re
import json
from pathlib import Path

import pytest
import yaml

from predict_jobs import small
from sim.cli import main
from sim.predict.gpus import PRESETS
from sim.predict.job import job_from_dict
from sim.predict.kernels import KernelParams
from sim.predict.kineto import MeasuredKernel, gemm_kernel, kernels_from_trace
from sim.predict.opcal import calibrate, load_csv, model_time_s, with_time
from sim.topology import SimInputError

H800 = PRESETS["H800"]
TRUTH = KernelParams(gemm=0.62, gemm_half_dim=48.0, attention_fwd=0.5, attention_bwd=0.4, memory=0.75,
                     launch_s=5e-6)


def _rows(noise: float = 0.0) -> list[MeasuredKernel]:
    rows = [gemm_kernel(f"g{m}", m, n, 4096, 1, 2.0, 0.0) for m in (96, 512, 2048, 8192) for n in (1024, 14336)]
    rows += [MeasuredKernel(f"m{b:g}", "memory", 0.0, b, (0, 0, 0), "fwd", 0.0) for b in (2e5, 3e7, 4e8, 2e9)]
    rows += [MeasuredKernel(f"a{f:g}{ph}", "attention", f, 1e8, (0, 0, 0), ph, 0.0)
             for f in (1e11, 2e12) for ph in ("fwd", "bwd")]
    out = []
    for i, r in enumerate(rows):
        wobble = 1 + noise * (1 if i % 2 else -1)
        out.append(with_time(r, model_time_s(r, H800, "bf16", TRUTH) * wobble))
    return out


def test_exact_measurements_give_back_the_factors() -> None:
    rep = calibrate(_rows(), H800, "bf16")
    p = rep.params
    assert (p.gemm, p.gemm_half_dim) == (pytest.approx(0.62, rel=1e-3), 48.0)
    assert (p.memory, p.launch_s) == (pytest.approx(0.75, rel=1e-3), pytest.approx(5e-6, rel=1e-3))
    assert (p.attention_fwd, p.attention_bwd) == (pytest.approx(0.5, rel=1e-3), pytest.approx(0.4, rel=1e-3))
    assert rep.error_after_pct < 0.1 < rep.error_before_pct and rep.kept_default == []


def test_noisy_measurements_and_held_out_error() -> None:
    rows = [MeasuredKernel(r.name, r.kind, r.flops, r.bytes, r.dims, r.phase, r.measured_s, i % 4 == 3)
            for i, r in enumerate(_rows(noise=0.03))]                    # ±3 %, every 4th held out
    rep = calibrate(rows, H800, "bf16")
    assert rep.heldout == 4 and rep.error_heldout_pct is not None
    assert rep.error_after_pct < 5 and rep.error_heldout_pct < 8
    assert abs(rep.params.gemm - 0.62) < 0.05


def test_a_kind_without_rows_keeps_its_default() -> None:
    rep = calibrate([r for r in _rows() if r.kind == "gemm"], H800, "bf16")
    assert rep.params.memory == KernelParams().memory and "memory" in rep.kept_default
    assert "default kept" in rep.summary()


def _trace() -> dict:
    ev = []

    def op(ext: int, name: str, dims: list, gpu_us: list[float], types: list | None = None) -> None:
        args = {"External id": ext, "Input Dims": dims}
        if types:
            args["Input type"] = types
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": ext * 100, "dur": 50, "args": args})
        for k, us in enumerate(gpu_us):
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{ext}.{k}", "ts": ext * 100 + k, "dur": us,
                       "args": {"External id": ext, "correlation": 1000 + ext}})

    op(1, "aten::mm", [[2048, 4096], [4096, 4096]], [250.0])
    op(2, "aten::addmm", [[4096], [2048, 4096], [4096, 1024]], [70.0])
    op(3, "aten::bmm", [[16, 512, 128], [16, 128, 512]], [10.0])
    op(4, "aten::linear", [[2, 1024, 4096], [14336, 4096], [14336]], [800.0])
    op(5, "aten::native_layer_norm", [[2048, 4096], [4096], [4096], [4096]], [15.0, 2.0], ["float"])
    op(6, "aten::_flash_attention_forward", [[2, 1024, 16, 128]], [300.0])      # not understood: skipped
    ev.append({"ph": "X", "cat": "kernel", "name": "orphan", "ts": 0, "dur": 3.0, "args": {}})
    return {"traceEvents": ev}


def test_trace_operators_become_kernels() -> None:
    ks, skipped = kernels_from_trace(_trace())
    by = {k.name: k for k in ks}
    assert skipped == 1
    assert by["aten::mm"].dims == (2048, 4096, 4096) and by["aten::mm"].flops == 2 * 2048 * 4096 * 4096
    assert by["aten::addmm"].dims == (2048, 1024, 4096)
    assert by["aten::bmm"].flops == 16 * 2 * 512 * 512 * 128
    assert by["aten::linear"].dims == (2048, 14336, 4096)
    ln = by["aten::native_layer_norm"]
    assert ln.kind == "memory" and ln.measured_s == pytest.approx(17e-6)          # both kernels summed
    assert ln.bytes == (2 * 2048 * 4096 + 3 * 4096) * 4                            # fp32: 4 bytes


def test_cli_on_a_gzipped_trace_writes_a_section_a_job_accepts(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rank0.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(_trace(), f)
    out = tmp_path / "kernels.yaml"
    assert main(["calibrate-ops", str(path), "--gpu", "H800", "--heldout-every", "0", "--write", str(out)]) == 0
    text = capsys.readouterr().out
    assert "error before" in text and "1 operators not understood" in text
    section = yaml.safe_load(out.read_text())["kernels"]
    job = job_from_dict(small(kernels=section), "j.yaml")
    assert 0 < job.kernels.gemm <= 1 and job.kernels.gemm_half_dim in section.values()


def test_csv_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "k.csv"
    lines = ["kind,name,M,N,K,flops,bytes,phase,measured_us,heldout"]
    for r in _rows():
        m, n, k = r.dims
        if r.kind == "gemm":
            lines.append(f"gemm,{r.name},{m},{n},{k},,,,{r.measured_s * 1e6!r},0")
        elif r.kind == "memory":
            lines.append(f"memory,{r.name},,,,,{r.bytes!r},,{r.measured_s * 1e6!r},0  # a comment")
        else:
            lines.append(f"attention,{r.name},,,,{r.flops!r},,{r.phase},{r.measured_s * 1e6!r},1")
    good.write_text("\n".join(lines) + "\n")
    rows = load_csv(good)
    assert len(rows) == len(_rows()) and sum(r.heldout for r in rows) == 4
    assert main(["calibrate-ops", str(good), "--gpu", "H800"]) == 0
    assert "error on the held-out kernels" in capsys.readouterr().out
    for body, message in [("kind,measured_us\nwarp,1\n", "k2.csv:2: kind: unknown kind 'warp'"),
                          ("kind,M,N,K,measured_us\ngemm,1,2,,5\n", "k2.csv:2: K: missing"),
                          ("kind,bytes,measured_us\nmemory,lots,5\n", "k2.csv:2: bytes: not a number: 'lots'"),
                          ("kind,name\ngemm,x\n", "k2.csv:1: header: missing column(s) measured_us")]:
        bad = tmp_path / "k2.csv"
        bad.write_text(body)
        with pytest.raises(SimInputError, match=re.escape(message)):
            load_csv(bad)
    assert main(["calibrate-ops", str(good), "--gpu", "B300"]) == 2
    assert main(["calibrate-ops", str(good), "--gpu", "A100-80GB", "--precision", "fp8"]) == 2
    assert "--precision: 'fp8'" in capsys.readouterr().err


def test_attention_from_a_trace_with_its_causal_flag() -> None:
    """SDPA forward and flash backward ops give attention kernels (FLOPs as the graph
    counts them, half when causal); one without the recorded flag is skipped; a fit on
    trace kernels timed by known factors gives the attention factors back."""
    q, k = [2, 16, 1024, 128], [2, 4, 1024, 128]               # GQA: 4 KV heads
    lse = [2, 16, 1024]
    ev = []

    def op(ext: int, name: str, dims: list, concrete: list | None, us: float) -> None:
        args: dict = {"External id": ext, "Input Dims": dims, "Input type": ["c10::BFloat16"] * len(dims)}
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": ext, "dur": 9, "args": args})
        ev.append({"ph": "X", "cat": "kernel", "name": f"flash{ext}", "ts": ext, "dur": us,
                   "args": {"External id": ext}})

    op(1, "aten::scaled_dot_product_attention", [q, k, k, [], [], [], [], []],
       ["", "", "", "", "0.", "True", "", "False"], 400.0)
    op(2, "aten::_scaled_dot_product_flash_attention", [q, k, k, [], [], [], []],
       ["", "", "", "0.", "False", "False", ""], 700.0)
    op(3, "aten::_scaled_dot_product_flash_attention_backward",
       [q, q, k, k, q, lse, [], [], [], [], [], [], [], [], []],
       ["", "", "", "", "", "", "", "", "1024", "1024", "0.", "True", "", "", ""], 1000.0)
    op(4, "aten::scaled_dot_product_attention", [q, k, k], None, 400.0)   # no flag: skipped
    ks, skipped = kernels_from_trace({"traceEvents": ev})
    by = {x.name: x for x in ks}
    full = 4 * 2 * 16 * 1024 * 1024 * 128
    assert skipped == 1 and all(x.kind == "attention" for x in ks)
    assert by["aten::scaled_dot_product_attention"].flops == full / 2              # causal
    assert by["aten::_scaled_dot_product_flash_attention"].flops == full           # not causal
    bwd = by["aten::_scaled_dot_product_flash_attention_backward"]
    assert (bwd.phase, bwd.flops) == ("bwd", 2.5 * full / 2)
    assert by["aten::_scaled_dot_product_flash_attention"].bytes == (2 * 16 + 2 * 4) * 2 * 1024 * 128 * 2
    timed = [with_time(x, model_time_s(x, H800, "bf16", TRUTH)) for x in ks] + \
        [r for r in _rows() if r.kind != "attention"]
    p = calibrate(timed, H800, "bf16").params
    assert (p.attention_fwd, p.attention_bwd) == (pytest.approx(0.5, rel=1e-3), pytest.approx(0.4, rel=1e-3))
