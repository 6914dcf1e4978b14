"""``vllm bench serve`` against a stand-in OpenAI-compatible server on 127.0.0.1.

The stand-in (``StandinServer``) answers ``GET /v1/models``, streams
``POST /v1/completions`` token by token, and serves ``GET /metrics`` with
``vllm:spec_decode_*`` counters that grow by known amounts per request (so the bench's
spec-decode section is computed from known counts). It listens on the loopback
address only, serves a bounded number of requests and stops by itself after a time
limit. vLLM's own ``vllm bench serve`` (the ``vllm.benchmarks.serve`` entry point)
runs against it with ``--save-result`` and ``--append-result``; the fixtures are the
result files and the inputs (command line, the server's counts).
Runs inside the oracle's virtualenv (needs aiohttp, which vLLM needs too).
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

MAX_REQUESTS = 400
TIME_LIMIT_S = 240


def write_tokenizer(d: Path) -> Path:
    """A word-level tokenizer (``t0`` ... ``t999``) saved as tokenizer.json."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    d.mkdir(parents=True, exist_ok=True)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for i in range(997):
        vocab[f"t{i}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "bos_token": "<s>",
        "eos_token": "</s>", "model_max_length": 4096}))
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                                               "vocab_size": 1000}))
    return d


class StandinServer:
    """Loopback OpenAI-compatible stand-in with spec-decode counters.

    Per completion of ``n`` output tokens with draft length ``k`` and a fixed
    acceptance pattern ``accept`` (accepted drafts per step, cycled), the counters
    grow as vLLM's scheduler would count them: one draft per step, ``k`` draft tokens
    per step, accepted tokens per position.
    """

    def __init__(self, k: int | None, accept: list[int], token_delay_s: float = 0.002):
        self.k, self.accept, self.delay = k, accept, token_delay_s
        self.num_drafts = self.num_draft_tokens = self.num_accepted = 0
        self.per_pos = [0] * (k or 0)
        self.requests = 0
        self.lock = threading.Lock()
        self.port = _free_port()
        self._stop = None

    def _count(self, n_out):
        if not self.k:
            return
        produced, i = 1, 0  # the prefill emits the first token
        with self.lock:
            while produced < n_out:
                a = self.accept[i % len(self.accept)]
                i += 1
                self.num_drafts += 1
                self.num_draft_tokens += self.k
                self.num_accepted += a
                for p in range(a):
                    self.per_pos[p] += 1
                produced += a + 1

    def metrics_text(self):
        if not self.k:
            return "# no speculative decoding\n"
        lab = 'engine="0",model_name="standin"'
        out = [
            "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {float(self.num_drafts)}",
            "# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.",
            "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {float(self.num_draft_tokens)}",
            "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.",
            "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {float(self.num_accepted)}",
            "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.",
            "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
        ]
        for p, v in enumerate(self.per_pos):
            out.append(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{p}"}} '
                       f"{float(v)}")
        return "\n".join(out) + "\n"

    async def _app(self):
        from aiohttp import web

        async def models(_req):
            return web.json_response({"object": "list", "data": [
                {"id": "standin", "object": "model", "owned_by": "specnb-oracle"}]})

        async def metrics(_req):
            return web.Response(text=self.metrics_text(), content_type="text/plain")

        async def completions(req):
            body = await req.json()
            self.requests += 1
            if self.requests > MAX_REQUESTS:
                return web.Response(status=503, reason="stand-in request limit reached")
            n = int(body.get("max_tokens") or 16)
            prompt = body.get("prompt") or ""
            n_in = len(prompt.split()) if isinstance(prompt, str) else len(prompt)
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(req)
            for i in range(n):
                chunk = {"id": "cmpl-standin", "object": "text_completion", "model": "standin",
                         "choices": [{"index": 0, "text": f" t{i % 997}", "finish_reason":
                                      "length" if i == n - 1 else None}]}
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
                await asyncio.sleep(self.delay)
            usage = {"id": "cmpl-standin", "object": "text_completion", "model": "standin",
                     "choices": [], "usage": {"prompt_tokens": n_in, "completion_tokens": n,
                                              "total_tokens": n_in + n}}
            await resp.write(f"data: {json.dumps(usage)}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            self._count(n)
            return resp

        app = web.Application()
        app.router.add_get("/v1/models", models)
        app.router.add_get("/metrics", metrics)
        app.router.add_post("/v1/completions", completions)
        app.router.add_get("/health", lambda _r: web.Response(text="ok"))
        return app

    def start(self):
        ready = threading.Event()

        def run():
            from aiohttp import web
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            runner = web.AppRunner(loop.run_until_complete(self._app()))
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", self.port)
            loop.run_until_complete(site.start())
            self._stop = asyncio.Event()
            ready.set()
            deadline = time.monotonic() + TIME_LIMIT_S

            async def wait():
                while not self._stop.is_set() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
            loop.run_until_complete(wait())
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(30)
        return self

    def stop(self):
        if self._stop is not None:
            self._stop.set()
        self.thread.join(10)

    def counts(self):
        return {"num_drafts": self.num_drafts, "num_draft_tokens": self.num_draft_tokens,
                "num_accepted_tokens": self.num_accepted, "accepted_per_pos": list(self.per_pos)}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: (run id, k or None for "no spec decode", acceptance pattern, extra bench args)
RUNS = [
    ("spec-k3", 3, [3, 2, 1, 0, 2], ["--num-prompts", "12", "--random-input-len", "32",
                                     "--random-output-len", "24", "--max-concurrency", "4",
                                     "--metric-percentiles", "50,90,99",
                                     "--goodput", "ttft:2000", "tpot:500"]),
    ("baseline", None, [], ["--num-prompts", "12", "--random-input-len", "32",
                            "--random-output-len", "24", "--max-concurrency", "4",
                            "--metric-percentiles", "50,90,99"]),
    ("spec-k5-longer-inputs", 5, [5, 4, 2, 1, 0], ["--num-prompts", "12", "--random-input-len",
                                                   "48", "--random-output-len", "24",
                                                   "--max-concurrency", "4",
                                                   "--percentile-metrics", "ttft,tpot,itl,e2el"]),
    ("spec-k1-single", 1, [1, 0, 1], ["--num-prompts", "1", "--random-input-len", "16",
                                      "--random-output-len", "32", "--max-concurrency", "1"]),
]


def run_bench(out: Path, work: Path) -> int:
    """Run every RUNS entry; write bench/<id>.json (--save-result), bench/appended.jsonl
    (--append-result: each run appended) and bench/inputs.jsonl. Returns the file count."""
    bdir = out / "bench"
    bdir.mkdir(parents=True, exist_ok=True)
    tok = write_tokenizer(work / "bench-tokenizer")
    appended = bdir / "appended.jsonl"
    if appended.exists():
        appended.unlink()
    inputs = []
    for rid, k, accept, extra in RUNS:
        srv = StandinServer(k, accept).start()
        try:
            common = [sys.executable, str(Path(__file__).with_name("bench_serve.py")),
                      "--backend", "openai", "--base-url", f"http://127.0.0.1:{srv.port}",
                      "--endpoint", "/v1/completions", "--model", "standin",
                      "--tokenizer", str(tok), "--dataset-name", "random", "--seed", "0",
                      "--request-rate", "inf", "--ready-check-timeout-sec", "0",
                      "--temperature", "0", "--label", rid] + extra
            for mode, fname in (("--save-result", f"{rid}.json"), ("--append-result", "appended.jsonl")):
                before = srv.counts()
                cmd = common + [mode, "--result-dir", str(bdir), "--result-filename", fname]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                                   env=dict(os.environ, PYTHONUNBUFFERED="1"))
                if p.returncode != 0:
                    raise RuntimeError(f"vllm bench serve failed ({rid}):\n{p.stdout[-3000:]}\n"
                                       f"{p.stderr[-3000:]}")
                after = srv.counts()
                if mode == "--save-result":
                    (bdir / f"{rid}.stdout.txt").write_text(
                        "\n".join(ln for ln in p.stdout.splitlines()
                                  if not ln.startswith("http://127.0.0.1")).replace(
                            str(work), "{work}"))
                inputs.append({"run": rid, "file": f"bench/{fname}", "mode": mode,
                               "argv": ["vllm", "bench", "serve"] + [
                                   c.replace(str(bdir), "{out}/bench").replace(str(work), "{work}")
                                   for c in cmd[2:]],
                               "num_speculative_tokens": k, "accept_pattern": accept,
                               "server_counts_before": before, "server_counts_after": after})
        finally:
            srv.stop()
    # paths of this machine out of the result files
    for f in list(bdir.glob("*.json")) + [appended]:
        f.write_text(f.read_text().replace(str(work), "{work}"))
    # drop the side files we do not keep
    for f in bdir.glob("*.pytorch.json"):
        f.unlink()
    with open(bdir / "inputs.jsonl", "w") as fh:
        for r in inputs:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    return len(list(bdir.glob("*.json"))) + 1
