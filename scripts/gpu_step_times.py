"""Measure decoding / verification step times of Llama-shaped models on a GPU.

Writes a calibration CSV for `specnb plan --calibrate` (columns `role`, `batch_size`,
`context`, `query_tokens`, `ms`, plus `model`, `gpu`, `backend`): one row per
(role, batch size B, context S, query tokens q), q = 1 for a plain decoding step and
q = gamma + 1 for a verification step.

What is timed: one forward of a minimal PyTorch Llama-architecture decoder (RMSNorm, GQA
attention with rotary-free projections, SwiGLU MLP, LM head on the q new tokens) with random
bf16 weights and a preallocated KV cache of S tokens per sequence, captured once as a CUDA
graph and replayed (median of `--reps` replays, CUDA events). Attention is
`torch.nn.functional.scaled_dot_product_attention` over S + q keys, by default with the g
query heads of each KV head folded into the query axis (each new token attends to all S + q
keys: the causal mask among the q new tokens is left out, which changes no byte and a
negligible share of the FLOPs). The shapes are the
catalogue's (Llama-3.1-8B target, Llama-3.2-1B draft); the arithmetic and the bytes moved per
step are those of the real models, the kernels are PyTorch's, not vLLM's (no paged attention,
no fused kernels), so absolute times differ from a serving engine. Use it as "the user's own
measurement" for calibrating the step-time model, not as a vLLM benchmark.

Usage (GPU):   python scripts/gpu_step_times.py --out steps.csv   (specnb importable: the
               project's .venv python, or PYTHONPATH=. from the repository root)
Smoke (CPU):   python scripts/gpu_step_times.py --smoke --out /tmp/steps.csv
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

#: The smoke run's model; the others' numbers come from the catalogue (:func:`shape`).
TINY = dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256)


def shape(name: str) -> dict:
    """Architecture numbers of ``name``: :data:`TINY`, or the catalogue's row
    (data/model_architectures.csv, from each model's Hugging Face config.json)."""
    if name == "tiny":
        return TINY
    from specnb import data

    r = data.load("model_architectures").set_index("model").loc[name]
    return dict(layers=int(r["n_layers"]), hidden=int(r["hidden_size"]), heads=int(r["n_heads"]),
                kv_heads=int(r["n_kv_heads"]), head_dim=int(r["head_dim"]),
                ffn=int(r["intermediate_size"]), vocab=int(r["vocab_size"]))


class Decoder:
    """Random-weight Llama-shaped decoder with a preallocated KV pool (no autograd)."""

    def __init__(self, shape: dict, max_tokens: int, device: str, dtype: torch.dtype,
                 attention: str = "folded"):
        torch.manual_seed(0)
        self.attention = attention
        self.s = shape
        h, hd = shape["hidden"], shape["head_dim"]
        qo, kv = shape["heads"] * hd, shape["kv_heads"] * hd

        def w(*size):
            t = torch.randn(*size, device=device, dtype=dtype)
            return t.mul_(1.0 / math.sqrt(size[-1]))

        self.layers = []
        for _ in range(shape["layers"]):
            self.layers.append(dict(
                qkv=w(qo + 2 * kv, h), o=w(h, qo), up_gate=w(2 * shape["ffn"], h),
                down=w(h, shape["ffn"]),
                kpool=torch.zeros(max_tokens * kv, device=device, dtype=dtype),
                vpool=torch.zeros(max_tokens * kv, device=device, dtype=dtype)))
        self.emb = w(shape["vocab"], h)
        self.head = w(shape["vocab"], h)
        self.device, self.dtype = device, dtype

    def forward(self, x: torch.Tensor, S: int) -> torch.Tensor:
        """x: (B, q, hidden) -> logits (B, q, vocab); attends to S cached + q new tokens."""
        s = self.s
        B, q, _ = x.shape
        H, Hkv, D = s["heads"], s["kv_heads"], s["head_dim"]
        L = S + q
        for lay in self.layers:
            hn = F.rms_norm(x, (x.shape[-1],))
            qkv = hn @ lay["qkv"].T
            qh, kh, vh = qkv.split([H * D, Hkv * D, Hkv * D], dim=-1)
            qh = qh.view(B, q, H, D).transpose(1, 2)
            k = lay["kpool"][: B * Hkv * L * D].view(B, Hkv, L, D)
            v = lay["vpool"][: B * Hkv * L * D].view(B, Hkv, L, D)
            k[:, :, S:] = kh.view(B, q, Hkv, D).transpose(1, 2)
            v[:, :, S:] = vh.view(B, q, Hkv, D).transpose(1, 2)
            if self.attention == "gqa":
                a = F.scaled_dot_product_attention(qh, k, v, enable_gqa=True)
            else:  # fold the g query heads of each KV head into the query axis: KV read once
                g = H // Hkv
                a = F.scaled_dot_product_attention(qh.reshape(B, Hkv, g * q, D), k, v)
                a = a.view(B, Hkv, g, q, D).reshape(B, H, q, D)
            x = x + a.transpose(1, 2).reshape(B, q, H * D) @ lay["o"].T
            hn = F.rms_norm(x, (x.shape[-1],))
            ug = hn @ lay["up_gate"].T
            u, gt = ug.chunk(2, dim=-1)
            x = x + (F.silu(gt) * u) @ lay["down"].T
        return F.rms_norm(x, (x.shape[-1],)) @ self.head.T


def time_step(model: Decoder, B: int, S: int, q: int, reps: int, graphs: bool) -> tuple[float, str]:
    """Median milliseconds of one forward, and the backend used ("torch-cudagraph" or
    "torch-eager": a graph capture that fails falls back to eager, and says so)."""
    x = torch.randn(B, q, model.s["hidden"], device=model.device, dtype=model.dtype)
    cuda = model.device.startswith("cuda")
    backend = "torch-eager"
    graph = None
    with torch.inference_mode():
        if cuda and graphs:
            try:
                graph = _capture(model, x, S)
                backend = "torch-cudagraph"
            except Exception as exc:  # noqa: BLE001 - report and time eagerly instead
                print(f"graph capture failed at B={B} S={S} q={q}: {exc}; eager", flush=True)
                graph = None
        if graph is not None:
            run = graph.replay
        else:
            def run():
                model.forward(x, S)
        for _ in range(2):
            run()
        times = []
        for _ in range(reps):
            if cuda:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                run()
                b.record()
                torch.cuda.synchronize()
                times.append(a.elapsed_time(b))
            else:
                t0 = time.perf_counter()
                run()
                times.append(1e3 * (time.perf_counter() - t0))
        del graph
    return statistics.median(times), backend


def _capture(model: Decoder, x: torch.Tensor, S: int):
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(2):
            model.forward(x, S)
    torch.cuda.current_stream().wait_stream(st)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model.forward(x, S)
    return graph


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--smoke", action="store_true", help="tiny model on the CPU, few points")
    p.add_argument("--budget-s", type=float, nargs=2, default=[90.0, 30.0], metavar=("TARGET", "DRAFT"),
                   help="seconds after which no new point is started, per role (model build included)")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--max-kv-tokens", type=int, default=2**19, help="largest B x (S + q) measured")
    p.add_argument("--no-graphs", action="store_true")
    p.add_argument("--attention", choices=["folded", "gqa"], default="folded",
                   help="folded: the g query heads of each KV head become g x q queries over one "
                        "KV head (the KV cache is read once, as FlashAttention's GQA kernels do); "
                        "gqa: scaled_dot_product_attention(enable_gqa=True), which on PyTorch "
                        "2.11 for q > 1 took a kernel that costs up to 3x a decoding step at 32k")
    a = p.parse_args(argv)

    if a.smoke:
        device, dtype, gpu = "cpu", torch.float32, "cpu"
        plan = [("target", "tiny", [1, 4], [64, 256], [1, 4]), ("draft", "tiny", [1, 4], [64], [1])]
        a.max_kv_tokens = 4096
    else:
        if not torch.cuda.is_available():
            print("no CUDA device; use --smoke on a CPU", file=sys.stderr)
            return 2
        device, dtype, gpu = "cuda", torch.bfloat16, torch.cuda.get_device_name(0)
        batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
        plan = [
            ("target", "Llama-3.1-8B", batches, [512, 2048, 8192, 32768], [1, 2, 4, 6]),
            ("draft", "Llama-3.2-1B", batches, [512, 2048, 8192, 32768], [1]),
        ]
    t_start = time.perf_counter()
    rows = []
    with open(a.out, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["role", "batch_size", "context", "query_tokens", "ms", "model", "gpu", "backend",
                     "attention"])
        for (role, name, batches, contexts, qs), budget in zip(plan, a.budget_s):
            t_role = time.perf_counter()
            model = Decoder(shape(name), a.max_kv_tokens, device, dtype, a.attention)
            for S in contexts:
                for B in batches:
                    for q in qs:
                        if B * (S + q) > a.max_kv_tokens:
                            continue
                        if time.perf_counter() - t_role > budget:
                            print(f"{role}: time budget reached at B={B} S={S} q={q}", flush=True)
                            break
                        ms, backend = time_step(model, B, S, q, a.reps, not a.no_graphs)
                        row = [role, B, S, q, f"{ms:.4f}", name, gpu, backend, a.attention]
                        wr.writerow(row)
                        fh.flush()
                        rows.append(row)
                        print(*row, sep=",", flush=True)
            del model
            if device == "cuda":
                torch.cuda.empty_cache()
    print(f"{len(rows)} points in {time.perf_counter() - t_start:.1f} s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
