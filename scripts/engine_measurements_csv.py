"""Write data/engine_measurements.csv from the team's engine-measurements.jsonl and the points
this script adds (:data:`ADDED`, issue 25: SGLang tree runs on a small MoE target, vLLM on an
RTX 4090, SGLang's DeepSeek-V3 MTP figures, SGLang PR #4247's dense trees on one H100 with a
borrowed baseline, SGLang PR #5318's dense chain and small tree with their own baseline, SGLang
PR #4716's send_one run, and points kept unscored for want of a tau: SGLang PR #2150,
SafeAILab/EAGLE issue #203), each with its URL.

One row per published point, tidy, with the project's provenance columns (``source``,
``arxiv_version``, ``table``, ``note``) plus ``source_key`` (one short name per source, the unit
of leave-one-source-out fits) and ``profile`` (the engine profile of data/engine_profiles.csv
the point belongs to). Values are copied as recorded; nothing is corrected. Run:
``python scripts/engine_measurements_csv.py ../shared/reference/engine-measurements.jsonl``.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

#: id prefix -> (source_key, profile, arxiv_version, table)
SOURCES = {
    "specforge-i339": ("specforge-i339", "sglang", "", "issue #339 tables (base model speed; EAGLE3 combined)"),
    "angelslim-i163": ("angelslim-i163", "sglang", "", "issue #163 table 'My results'"),
    "sglang-docs-dsv3": ("sglang-docs-dsv3", "sglang", "", "DeepSeek usage guide, Multi-token Prediction"),
    "vllm-pr24243": ("vllm-pr24243", "vllm", "", "PR #24243 description, Test Plan"),
    "vllm-pr16035": ("vllm-pr16035", "vllm", "", "PR #16035 comment by ekagra-ranjan, 2025-04-09"),
    "sglang-pr4716": ("sglang-pr4716", "sglang", "", "PR #4716 comment by ispobock, 2025-03-24"),
    "sglang-pr4247": ("sglang-pr4247", "sglang", "", "PR #4247 comment by chromecast56, 2025-03-10 "
                      "(with CUDA graphs)"),
    "sglang-pr2150": ("sglang-pr2150", "sglang", "", "PR #2150 description (also SafeAILab/EAGLE "
                      "PR #173)"),
    "sglang-pr5318": ("sglang-pr5318", "sglang", "", "PR #5318 description, 'Final Send One Test "
                      "for CUDA Graph + Torch Compile', LLaMA 3.1 8B table"),
    "eagle-i203": ("eagle-i203", "sglang", "", "SafeAILab/EAGLE issue #203 comment by jiahe7ay, "
                   "2025-07-02"),
    "e3t3-sglang": ("eagle3-t3-sglang", "sglang", "2503.01840v3", "Table 3"),
    "e3t5-vllm": ("eagle3-t5-vllm", "vllm-v0", "2503.01840v3", "Table 5"),
    "magicdec-t5-mlc": ("magicdec-t5-mlc", "mlc-llm", "2408.11049", "Appendix Table 5"),
    "vllm-i20780": ("vllm-i20780", "vllm", "", "issue #20780 tables 'AL' and 'TPOT ms'"),
    "vllm-pr16937": ("vllm-pr16937", "vllm", "", "PR #16937 comment 2025-04-24"),
    "vllm-blog24": ("vllm-blog24", "vllm-v0", "", "blog 2024-10-17 figures 5 and 7"),
    "sglang-mtp-dsv3": ("lmsys-mtp-dsv3", "sglang", "", "blog 2025-07-17 case studies 1 and 2"),
}

COLUMNS = ["id", "source_key", "profile", "engine", "concurrency_kind", "gpu", "gpu_published",
           "gpus", "model", "model_published", "draft", "method_published", "gamma", "topk",
           "num_draft_tokens", "batch", "qps", "context", "context_assumed", "dataset", "tau",
           "tau_note", "tau_borrowed", "speedup", "metric", "t_plain_ms", "t_draft_ms",
           "draft_kv_budget", "read_off_figure", "url", "source", "arxiv_version", "table",
           "note"]

#: source_key -> URL of the source (every row carries its source's)
URLS = {
    "eagle3-t3-sglang": "https://arxiv.org/abs/2503.01840v3",
    "eagle3-t5-vllm": "https://arxiv.org/abs/2503.01840v3",
    "magicdec-t5-mlc": "https://arxiv.org/abs/2408.11049",
    "vllm-i20780": "https://github.com/vllm-project/vllm/issues/20780",
    "vllm-pr16937": "https://github.com/vllm-project/vllm/pull/16937",
    "vllm-blog24": "https://blog.vllm.ai/2024/10/17/spec-decode.html",
    "lmsys-mtp-dsv3": "https://lmsys.org/blog/2025-07-17-mtp",
    "specforge-i339": "https://github.com/sgl-project/SpecForge/issues/339",
    "angelslim-i163": "https://github.com/Tencent/AngelSlim/issues/163",
    "sglang-docs-dsv3": "https://docs.sglang.ai/references/deepseek.html",
    "vllm-pr24243": "https://github.com/vllm-project/vllm/pull/24243",
    "vllm-pr16035": "https://github.com/vllm-project/vllm/pull/16035",
    "sglang-pr4716": "https://github.com/sgl-project/sglang/pull/4716",
    "sglang-pr4247": "https://github.com/sgl-project/sglang/pull/4247",
    "sglang-pr2150": "https://github.com/sgl-project/sglang/pull/2150",
    "sglang-pr5318": "https://github.com/sgl-project/sglang/pull/5318",
    "eagle-i203": "https://github.com/SafeAILab/EAGLE/issues/203",
}

_SGL = "SGLang (SpecForge bench_eagle3.py; version not stated)"
_TAU_SGL = ("published 'acc len' / 'accept_length': SGLang's mean tokens per verification per "
            "request, the bonus token included (= vLLM's mean acceptance length)")


#: What SGLang PR #4716's two runs (the MT-bench one and send_one's) share: the server.
_PR4716 = dict(engine="SGLang (March 2025)", gpu="H100-SXM",
               gpu_published="H100, TP8 (SXM ASSUMED)", gpus=8, model="Llama-3.1-70B",
               model_published="meta-llama/Llama-3.3-70B-Instruct (Llama-3.1-70B's shape)",
               draft="eagle3", gamma=8, topk=8, num_draft_tokens=64, batch=1,
               context_assumed=True, tau_note=_TAU_SGL, tau_borrowed=False)


def _sglang_tree(prefix, gpus, when, base, rows, dataset, extra_note):
    """Rows of an SGLang tree sweep: (batch, steps, topk, num_draft_tokens, tok/s, acc len);
    the speedup is the throughput ratio against the base run at the same batch."""
    out = []
    for b, steps, topk, ndt, tps, al in rows:
        out.append(dict(
            id=f"{prefix}-B{b}-s{steps}k{topk}n{ndt}", engine=f"{_SGL}, {when}",
            concurrency_kind="batch size (bench_eagle3.py --config-list bs,steps,topk,ndt)",
            gpu="H100-SXM", gpu_published=f"H100*{gpus} (SXM ASSUMED)", gpus=gpus,
            model="Qwen3-30B-A3B", model_published="Qwen/Qwen3-30B-A3B", draft="eagle3",
            method_published=(f"EAGLE3, --speculative-num-steps {steps} --speculative-eagle-topk "
                              f"{topk} --speculative-num-draft-tokens {ndt}"),
            gamma=steps, topk=topk, num_draft_tokens=ndt, batch=b, context=512,
            context_assumed=True, dataset=dataset, tau=al, tau_note=_TAU_SGL,
            tau_borrowed=False, speedup=round(tps / base[b], 4),
            metric=f"output throughput ratio {tps} / {base[b]} tok/s (same batch, no speculation)",
            note=("bf16, tensor parallel; context 512 ASSUMED (an MT-bench turn); "
                  + extra_note)))
    return out


#: Points this script adds (issue 25), as published; speedups are ratios of the printed
#: throughputs (DERIVED), tau the printed acceptance length.
ADDED = (
    _sglang_tree("specforge-i339", 2, "Dec 2025",
                 {1: 222.47, 4: 566.21},
                 [(1, 3, 1, 4, 159.78, 1.86), (1, 3, 3, 8, 172.99, 2.20), (1, 3, 3, 4, 207.62, 1.99),
                  (1, 7, 4, 16, 191.90, 2.52), (1, 6, 4, 12, 171.54, 2.42), (1, 8, 8, 60, 177.5, 3.2),
                  (4, 3, 1, 4, 447.90, 1.86), (4, 3, 3, 8, 426.46, 2.27)],
                 "MT-bench (20 questions)", "draft zhuyksir/EAGLE3-Qwen3-30B-A3B-DenseHead; "
                 "--cuda-graph-max-bs 64")
    + _sglang_tree("angelslim-i163", 4, "Dec 2025",
                   {1: 218.89, 4: 507.49, 8: 677.14, 32: 1128.30, 64: 1237.84},
                   [(1, 3, 3, 4, 170.35, 2.017), (1, 3, 2, 8, 185.28, 2.216),
                    (1, 4, 4, 16, 185.64, 2.542), (1, 7, 10, 64, 193.31, 3.034),
                    (4, 4, 4, 16, 476.37, 2.556), (8, 4, 4, 16, 673.14, 2.578),
                    (32, 4, 4, 16, 927.11, 2.560), (64, 4, 4, 16, 1307.95, 2.553)],
                   "not stated (SpecForge benchmark list)", "draft AngelSlim Qwen3-a3B_eagle3; "
                   "tp 4, ep 1, temperature 0")
    + [dict(id=f"sglang-docs-dsv3-B{b}", engine="SGLang (2025), DeepSeek usage guide",
            concurrency_kind="batch size", gpu="H200", gpu_published="H200, TP8", gpus=8,
            model="DeepSeek-V3", model_published="DeepSeek-V3 / R1", draft="mtp",
            method_published="NextN (MTP) via EAGLE; the guide's example: --speculative-num-steps 3 "
                             "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
            gamma=3, topk=1, num_draft_tokens=4, batch=b, context=512, context_assumed=True,
            dataset="not stated", tau="", tau_note="not printed", tau_borrowed=False,
            speedup=sp, metric="decoding speed ratio with / without MTP",
            note="configuration of the measured run not stated (the example command's "
                 "ASSUMED); fp8 weights ASSUMED (the checkpoint's)")
       for b, sp in ((1, 1.8), (32, 1.5))]
    + [dict(id=f"vllm-pr24243-C{c}", engine="vLLM V1 (Sept 2025)", concurrency_kind="concurrency",
            gpu="RTX-4090", gpu_published="single RTX 4090", gpus=1, model="MiniCPM3-4B",
            model_published="openbmb/MiniCPM3-4B", draft="eagle3",
            method_published="EAGLE-3, 5 speculative tokens (5 per-position rates printed)",
            gamma=5, topk=1, num_draft_tokens=6, batch=c, context=512, context_assumed=True,
            dataset=f"{n} samples", tau=tau, tau_note="published mean acceptance length",
            tau_borrowed=False, speedup=sp,
            metric=f"run-time ratio baseline {base} s / speculative {spec} s (end to end)",
            note="context 512 ASSUMED (prompts not printed; about 533 output tokens per "
                 "sample); MiniCPM3 uses MLA. DERIVED: at concurrency 1 the plain run takes "
                 "382.29 s / 21,690 tokens = 17.6 ms per token, far above the 4 B model's bf16 "
                 "weight read (about 8 ms at 1,008 GB/s): data/gpus.csv's RTX-4090 "
                 "layer_fixed_us comes from this plain time (not from the speedups)")
       for c, n, tau, sp, base, spec in ((1, 20, 2.44, 1.71, 382.29, 224.20),
                                         (10, 200, 2.47, 1.62, 215.84, 133.24))]
    + [dict(id=f"vllm-pr16035-eagle-K{k}-B1", engine="vLLM V1 (April 2025, the PR's branch), "
                                                     "offline examples/offline_inference/eagle.py",
            concurrency_kind="max_num_seqs 1", gpu="H100-SXM",
            gpu_published="not stated in the comment (the author's runs in PR #16937: H100): "
                          "ASSUMED",
            gpus=1, model="Llama-3.1-8B", model_published="Meta-Llama-3-8B-Instruct (the "
            "draft lmsys/sglang-EAGLE-LLaMA3-Instruct-8B's target; Llama-3.1-8B's shape)",
            draft="eagle", method_published=f"EAGLE-1, num_spec_tokens {k}", gamma=k, topk=1,
            num_draft_tokens=k + 1, batch=1, context=256, context_assumed=True,
            dataset="MT-bench (80 prompts)", tau=al, tau_note="published 'Accpt Len'",
            tau_borrowed=False, speedup=round(tps / 128.64, 4),
            metric=f"output tokens/s ratio {tps} / 128.64 (vanilla)",
            note="an early V1 EAGLE (the PR that loaded EAGLE heads in V1; its acceptance is "
                 "below later V1 runs of the same head); context 256 ASSUMED as for #20780")
       for k, al, tps in ((2, 1.89, 175.49), (4, 2.08, 165.65))]
    + [{**_PR4716, **run} for run in (
        dict(id="sglang-pr4716-eagle3-B1-s8k8n64",
             concurrency_kind="batch size 1 (--cuda-graph-max-bs 1, MT-bench one request at a "
                              "time)",
             method_published="EAGLE3 (yuhuili/EAGLE3-LLaMA3.3-Instruct-70B), "
                              "--speculative-num-steps 8 --speculative-eagle-topk 8 "
                              "--speculative-num-draft-tokens 64",
             context=512, dataset="MT-bench (80 questions)", tau=5.88,
             speedup=round(234.54 / 88.61, 4),
             metric="output throughput ratio 234.54 / 88.61 tok/s",
             note="fp16; context 512 ASSUMED (an MT-bench turn); the head's hidden size differs "
                  "from the target's (the PR's fix), the model times it as one target-shaped "
                  "layer with a 32,000-row LM head (ASSUMED)"),
        dict(id="sglang-pr4716-eagle3-B1-s8k8n64-send-one",
             concurrency_kind="one request (python -m sglang.test.send_one)",
             method_published="EAGLE3 (yuhuili/EAGLE3-LLaMA3.3-Instruct-70B), the same server "
                              "as the MT-bench run: --speculative-num-steps 8 "
                              "--speculative-eagle-topk 8 --speculative-num-draft-tokens 64",
             context=256, dataset="one prompt (sglang.test.send_one's)", tau=2.42,
             speedup=round(100.43 / 88.61, 4),
             metric=("decoding speed ratio 100.43 / 88.61 token/s; the baseline is BORROWED: "
                     "the comment prints no send_one run without speculation, 88.61 is the "
                     "same PR's MT-bench throughput without speculation (same server flags)"),
             note="context 256 ASSUMED (a short prompt and its answer, as for PR #2150); the "
                  "same tree as the MT-bench row at a lower acceptance (the comment: 'the "
                  "speedup is not significant'): a round takes 24.1 ms here and 25.1 ms there "
                  "(tau / throughput), so the round's cost does not follow the acceptance"))]
    + [dict(id=f"sglang-pr4247-{m}-B1-s{s}k8n64", engine="SGLang (March 2025, the PR's branch)",
            concurrency_kind="batch size 1 (MT-bench bench_sglang_eagle.py, one request at a time)",
            gpu="H100-SXM", gpu_published="not stated in the comment; 1x H100 per hongyanz "
            "(hemingkx/Spec-Bench issue #22: ~380 tokens/s on a single H100 for this PR)",
            gpus=1, model="Llama-3.1-8B", model_published="Llama 3.1 8B (Instruct)", draft=d,
            method_published=(f"{m.upper()}, --speculative-num-steps {s}; topk and "
                              "num_draft_tokens not printed: SGLang's defaults then, "
                              "--speculative-eagle-topk 8 --speculative-num-draft-tokens 64 "
                              "(server_args.py of late 2024 - early 2025), ASSUMED"),
            gamma=s, topk=8, num_draft_tokens=64, batch=1, context=512, context_assumed=True,
            dataset="MT-bench (80 questions; EAGLE's Llama-3 system prompt)", tau=al,
            tau_note=_TAU_SGL, tau_borrowed=False, speedup=round(tps / 158.34, 4),
            metric=(f"output throughput ratio {tps} / 158.34 tok/s; the baseline is BORROWED: "
                    "the PR prints none, 158.34 is EAGLE-3 Table 4's and SGLang's docs' "
                    "'SGLang (w/o speculative, 1x H100)' on the same MT-bench"),
            note=("context 512 ASSUMED (an MT-bench turn); the comment's first runs without "
                  "CUDA graphs (EAGLE-3 276.30, EAGLE-2 224.70 tok/s) are not recorded; "
                  "EAGLE-2 in SGLang is the EAGLE-1 head with a dynamic tree (draft eagle)"))
       for m, d, s, tps, al in (("eagle3", "eagle3", 8, 378.57, 5.39),
                                ("eagle3", "eagle3", 5, 361.70, 4.68),
                                ("eagle", "eagle", 8, 230.08, 3.76))]
    + [dict(id=f"sglang-pr5318-eagle3-B1-s{s}k{k}n{n}", engine="SGLang (April 2025, the PR's "
            "branch; FA3 attention backend, CUDA graphs and torch.compile, --cuda-graph-max-bs 2)",
            concurrency_kind="one request (python -m sglang.test.send_one)",
            gpu="H100-SXM", gpu_published="not stated; the PR adds topk > 1 to the FA3 "
            "backend, which SGLang ran on Hopper only then (SGLang issue #5938 tracks FA3 on "
            "sm80 from 2025-05-01): H100-SXM ASSUMED (an H200 would give the class 8.1 %)",
            gpus=1, model="Llama-3.1-8B",
            model_published="LLaMA 3.1 8B (Instruct)", draft="eagle3",
            method_published=(f"EAGLE3, --speculative-num-steps {s} --speculative-eagle-topk {k} "
                              f"--speculative-num-draft-tokens {n} (the table's '{s}{k}{n}')"),
            gamma=s, topk=k, num_draft_tokens=n, batch=1, context=256, context_assumed=True,
            dataset="one prompt (sglang.test.send_one's)", tau=al, tau_note=_TAU_SGL,
            tau_borrowed=False, speedup=round(tps / 148.66, 4),
            metric=f"decoding speed ratio {tps} / 148.66 token/s ('No Spec', same flags)",
            note="context 256 ASSUMED (a short prompt and its answer, as for PR #2150); the "
                 "PR's DeepSeek-V3 rows of the same table are not recorded (MoE, GPUs not "
                 "stated)")
       for s, k, n, al, tps in ((3, 1, 4, 2.12, 214.14), (5, 4, 8, 2.56, 204.46))]
    + [dict(id="sglang-pr2150-eagle-B1-s5k8n64", engine="SGLang (Nov 2024, the PR's branch)",
            concurrency_kind="one request (the PR's script: one /generate call, 256 new tokens)",
            gpu="H100-SXM", gpu_published="a single H100 (SXM ASSUMED)", gpus=1,
            model="Llama-2-7B", model_published="meta-llama/Llama-2-7b-chat-hf", draft="eagle",
            method_published="EAGLE (lmzheng/sglang-EAGLE-llama2-chat-7B), "
                             "--speculative-num-steps 5 --speculative-eagle-topk 8 "
                             "--speculative-num-draft-tokens 64",
            gamma=5, topk=8, num_draft_tokens=64, batch=1, context=256, context_assumed=True,
            dataset="one prompt ('Give me a simple FastAPI server...')", tau="",
            tau_note="not printed", tau_borrowed=False, speedup=round(297 / 156, 4),
            metric="decoding speed ratio 297 / 156 token/s (316 with torch.compile, not recorded)",
            note="not scored: no acceptance length printed; context 256 ASSUMED")]
    + [dict(id=f"eagle-i203-{m}", engine="SGLang (July 2025)", concurrency_kind="not stated",
            gpu="H200", gpu_published="a single H200", gpus=1, model=m, model_published=f"{m}",
            draft="eagle3", method_published=f"EAGLE-3 ({h}); steps, topk, num_draft_tokens "
                                             "not printed",
            gamma=3, topk="", num_draft_tokens="", batch=1, context=512, context_assumed=True,
            dataset="not stated", tau="", tau_note="not printed", tau_borrowed=False,
            speedup=round(on / off, 4), metric=f"tokens/s ratio {on} / {off}",
            note="not scored: no acceptance length and no draft configuration printed (gamma 3 "
                 "is a placeholder); batch 1 ASSUMED")
       for m, h, off, on in (("Qwen3-8B", "Tengyunw/qwen3_8b_eagle3", 186, 365),
                             ("Qwen3-30B-A3B", "Tengyunw/qwen3_30b_moe_eagle3", 147, 231))]
)

PROFILE_NOTE = {
    "eagle3-t5-vllm": "profile vllm-v0: the EAGLE-3 paper (v1 March 2025) predates EAGLE in vLLM V1 "
                      "(PR #16937, April 2025) and engines.md's table calls it V0-era; engines.md "
                      "section 2 item 4 counts it among V1 sources: inconsistent, kept as V0",
}


def main(path: str) -> None:
    out = Path(__file__).resolve().parent.parent / "data" / "engine_measurements.csv"
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        prefix = next(p for p in SOURCES if d["id"].startswith(p))
        key, profile, version, table = SOURCES[prefix]
        note = "; ".join(x for x in (d.get("note", ""), PROFILE_NOTE.get(key, "")) if x)
        row = {c: d.get(c, "") for c in COLUMNS}
        borrowed = str(d.get("tau_note", "")).startswith("borrowed")
        row.update(source_key=key, profile=profile, arxiv_version=version, table=table,
                   note=note or "as published", url=URLS[key], tau_borrowed=borrowed,
                   topk=1 if d.get("gamma") else "",
                   num_draft_tokens=int(d["gamma"]) + 1 if d.get("gamma") else "")
        rows.append({k: ("" if v is None else v) for k, v in row.items()})
    for d in ADDED:
        prefix = next(p for p in SOURCES if d["id"].startswith(p))
        key, profile, version, table = SOURCES[prefix]
        row = {c: d.get(c, "") for c in COLUMNS}
        row.update(source_key=key, profile=profile, arxiv_version=version, table=table,
                   url=URLS[key], source=f"{URLS[key]} ({table})", read_off_figure=False)
        rows.append({k: ("" if v is None else v) for k, v in row.items()})
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows -> {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/engine-measurements.jsonl")
