"""specnb.vllm.requests: vLLM's per-request metrics.speculative_decoding summed into counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specnb.vllm import acceptance_stats
from specnb.vllm.requests import read_request_metrics

CASES = Path(__file__).resolve().parents[1] / "cases" / "vllm" / "0.33.0" / "requests"


def test_responses_built_by_vllm_sum_to_the_steps_fed_in():
    responses = [json.loads(x) for x in (CASES / "responses.jsonl").read_text().splitlines()]
    steps = json.loads((CASES / "steps.json").read_text())
    flat = [s for req in steps for s in req]
    counts = read_request_metrics(responses)
    assert counts.drafts == len(flat)
    assert counts.draft_tokens == sum(d for d, _ in flat)
    assert counts.accepted_tokens == sum(a for _, a in flat)
    assert counts.accepted_per_position == tuple(
        float(sum(a > i for _, a in flat)) for i in range(3))
    stats = acceptance_stats(counts)
    assert stats.mean_acceptance_length == pytest.approx(1 + sum(a for _, a in flat) / len(flat))
    assert stats.num_speculative_tokens == 3
    # each response's own mean_acceptance_length is the same definition
    for r, req in zip(responses, steps):
        one = read_request_metrics([r])
        assert 1 + one.accepted_tokens / one.drafts == pytest.approx(
            r["metrics"]["speculative_decoding"]["mean_acceptance_length"])


def test_responses_without_the_section_or_damaged_are_refused():
    with pytest.raises(ValueError, match="per-request-spec-decode-metrics"):
        read_request_metrics([{"choices": []}])
    r = json.loads((CASES / "responses.jsonl").read_text().splitlines()[0])
    r["metrics"]["speculative_decoding"]["acceptance_histogram"] = [0, 0, 0, 1]
    with pytest.raises(ValueError, match="disagrees"):
        read_request_metrics([r])


def test_sse_lines_give_their_json_and_the_rest_none():
    from specnb.vllm.requests import is_sse, sse_data

    assert sse_data('data: {"a": 1}') == '{"a": 1}' and sse_data('data:{"a": 1}') == '{"a": 1}'
    assert [sse_data(x) for x in ("data: [DONE]", "", "  ", ": ping", "event: x", "id: 3")] \
        == [None] * 6
    assert sse_data('{"a": 1}') == '{"a": 1}'  # a JSON line reads unchanged
    assert is_sse('\ndata: {"a": 1}\n\n') and not is_sse('{"a": 1}\n')
