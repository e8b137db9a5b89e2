"""Issue 31, thirteenth round (i31-tt-s47): torchtitan's K and V as it runs them — the
``repeat_kv`` copy of grouped-query attention's heads (``framework.repeat_kv``) and the
memory torch's ring attention holds under context parallelism (``MemoryBreakdown.cp_buffers``,
:func:`sim.predict.cp_ring.buffer_bytes`) — and the attention backend the torchtitan
profile pins."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.predict import cp_ring
from sim.predict.framework import PROFILES, resolve_framework
from sim.predict.graph import layer_backward, layer_forward, recompute_forward
from sim.predict.job import job_from_dict
from sim.predict.memory import stage_memory
from sim.predict.predict import predict
from sim.predict.report import summary_lines
from sim.topology import SimInputError

LLAMA = {"layers": 4, "hidden": 4096, "heads": 32, "kv_heads": 8, "seq_length": 8192, "vocab": 128256,
         "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "ffn_hidden": 14336, "tied_embeddings": False}
ROOT = Path(__file__).resolve().parents[2]


def job(framework: dict, model: dict | None = None, tp: int = 1, cp: int = 1, seq: int = 8192,
        recompute: str = "selective"):
    return job_from_dict({"model": {**LLAMA, **(model or {}), "seq_length": seq},
                          "training": {"global_batch": 8 // cp, "recompute": recompute},
                          "parallel": {"tp": tp, "cp": cp, "dp": 8 // cp // tp, "zero": 3},
                          "gpu": {"preset": "H100-SXM"}, "framework": framework}, "j.yaml")


def named(kernels, name: str):
    return [k for k in kernels if k.name == name]


def test_profiles_leave_repeat_kv_off() -> None:
    """Every profile runs without the copy (the torchtitan profile too: on, the fit split
    loses two rows; sim/README's thirteenth round); a job turns it on."""
    assert all(not f.repeat_kv for f in PROFILES.values())
    assert resolve_framework({"name": "torchtitan", "repeat_kv": True}, "j.yaml").repeat_kv


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_repeat_kv_copies_kv_to_every_local_head(tp: int) -> None:
    """Forward: read the KV heads, write a/t heads, K and V (2·T·(a/t + g/t)·d·2 bytes), after
    the rotary kernel and before the attention; backward: the sum back, the same bytes."""
    on = job({"name": "torchtitan", "compile": True, "repeat_kv": True}, tp=tp)
    fwd = layer_forward(on, False)
    names = [k.name for k in fwd]
    assert names.index("rope") < names.index("repeat_kv") < names.index("attention")
    tokens = on.training.micro_batch * 8192
    want = 2.0 * tokens * (32 // tp + 8 // tp) * 128 * 2
    assert [k.bytes for k in named(fwd, "repeat_kv")] == [want]
    assert [k.bytes for k in named(layer_backward(on, False), "repeat_kv.bwd")] == [want]
    off = job({"name": "torchtitan", "compile": True}, tp=tp)
    assert not named(layer_forward(off, False), "repeat_kv")
    assert not named(layer_backward(off, False), "repeat_kv.bwd")


def test_repeat_kv_nothing_without_gqa_and_replayed_with_recomputation() -> None:
    """n_rep = 1 (as many KV heads as heads): ``repeat_kv`` returns its input, no kernel.
    Recomputation replays the copy (not in torchtitan's per-op save list; full AC replays
    the block)."""
    mha = job({"name": "torchtitan", "repeat_kv": True}, model={"kv_heads": 32})
    assert not named(layer_forward(mha, False), "repeat_kv")
    for rec in ("selective", "full"):
        j = job({"name": "torchtitan", "compile": True, "repeat_kv": True}, recompute=rec)
        assert named(recompute_forward(j, False), "recompute.repeat_kv"), rec


def test_repeat_kv_costs_time() -> None:
    """The copy is memory-bound work on the critical path: the iteration grows."""
    off = predict(job({"name": "torchtitan", "compile": True}))
    on = predict(job({"name": "torchtitan", "compile": True, "repeat_kv": True}))
    assert on.iteration_s > off.iteration_s


def test_bad_repeat_kv_is_refused_by_name() -> None:
    with pytest.raises(SimInputError, match=r"framework\.repeat_kv"):
        job({"name": "torchtitan", "repeat_kv": "yes"})


def test_bad_repeat_kv_on_the_command_line(tmp_path: Path) -> None:
    """The CLI names the field and exits 2, no traceback."""
    spec = tmp_path / "job.yaml"
    spec.write_text("model: {layers: 2, hidden: 1024, heads: 16, kv_heads: 4, seq_length: 1024, vocab: 32000}\n"
                    "training: {global_batch: 8}\nparallel: {dp: 8, zero: 3}\ngpu: {preset: H100-SXM}\n"
                    "framework: {name: torchtitan, repeat_kv: 3}\n")
    r = subprocess.run([sys.executable, "-m", "sim", "predict", str(spec)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "framework.repeat_kv" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_cp_ring_buffers_in_the_memory(cp: int) -> None:
    """torch's ring attention holds all c ranks' K and V (a/t heads, bf16) and fp32 dQ and
    dK/dV accumulators (two of the latter: accumulating, in flight): c·2N·2 + 20N bytes,
    N = s/c · a/t · d; the stage's total carries them."""
    j = job({"name": "torchtitan", "compile": True}, cp=cp, seq=32768 * cp, recompute="full")
    n = 32768 * 32 * 128
    m = stage_memory(j, 0)
    assert m.cp_buffers == pytest.approx(cp * 2 * n * 2 + 20 * n)
    assert m.total == pytest.approx(m.weights + m.grads + m.optimizer + m.activations + m.logits + m.reserved
                                    + m.cp_buffers)
    ring = job({"name": "torchtitan", "compile": True, "cp_comm": "ring"}, cp=cp, seq=32768 * cp, recompute="full")
    assert stage_memory(ring, 0).cp_buffers == pytest.approx(2 * 2 * n * 2 + 20 * n)   # local + arriving block


def test_no_cp_buffers_without_torch_ring_attention() -> None:
    assert stage_memory(job({"name": "torchtitan"}), 0).cp_buffers == 0.0                          # c = 1
    one = job({"name": "torchtitan", "cp_attention": "one_kernel"}, cp=2, seq=65536, recompute="full")
    assert stage_memory(one, 0).cp_buffers == 0.0 == cp_ring.buffer_bytes(one)


def test_report_names_the_cp_buffers() -> None:
    j = job({"name": "torchtitan", "compile": True}, cp=4, seq=131072, recompute="full")
    line = next(x for x in summary_lines(predict(j)) if x.startswith("memory per GPU"))
    assert "CP buffers" in line


def test_torchtitan_attention_is_torch_flash_on_h100() -> None:
    """torch's SDPA picks its flash backend (FlashAttention-2) on an H100 at the benchmarks'
    torch (1963fc8, 2024-12-23): cuDNN's is the last choice from pytorch#138522 on; under CP
    torchtitan allows only flash and efficient attention."""
    assert PROFILES["torchtitan"].attention_impl("H100") == "fa2"
