"""SGLang's acceptance figures, read into specnb's numbers.

Two inputs (SGLang source, ``python/sglang/srt/managers/scheduler_metrics_mixin.py`` and
``tokenizer_manager.py``, and the PRs named):

* the server log's ``Decode batch, #running-req: B, ... accept len: L, accept rate: R, ...``
  lines, one per ``--decode-log-interval`` batches (default 40). ``accept len`` is
  (accepted drafts + bs) / (bs x steps) over the interval: tokens per verification step *with*
  the bonus token, specnb's tau. ``accept rate`` before PR #23530 (merged 2026-04-23) was
  ``(accepted + bs) / (bs x speculative_num_draft_tokens)``: the bonus token counted as
  accepted and the current-token slot as drafted, biased upward by (k - m) / (k (k + 1)) at m
  accepted of k; from that PR on it is accepted / proposed drafts, specnb's acceptance rate.
  The lines print no counts: the intervals are combined weighted by ``#running-req`` (the
  batch at the time of the line, a stand-in for the interval's verification steps).
* a response's ``meta_info`` (``/generate``; ``return_meta_info`` on the OpenAI routes):
  ``spec_verify_ct`` (verification steps), ``completion_tokens``, ``spec_accept_length``
  (= completion_tokens / spec_verify_ct, bonus included), and the draft counts under the names
  of each version (verl PR #7543's table): ``spec_accept_token_num`` / ``spec_draft_token_num``
  (up to 0.5.10.post1), ``spec_accepted_drafts`` / ``spec_proposed_drafts`` (0.5.11),
  ``spec_num_correct_drafts`` / ``spec_num_proposed_drafts`` (0.5.12 on), with
  ``spec_correct_drafts_histogram`` (steps that accepted exactly j drafts, PR #33518) where
  given. Responses are summed: exact counts.
"""

from __future__ import annotations

import math
import re

from .. import _check
from . import EngineAcceptance

__all__ = ["LOG_MARK", "read_sglang_log", "read_sglang_meta_info", "is_sglang_log"]

#: The text every SGLang decode-stats line with speculation carries.
LOG_MARK = "accept len:"
_LINE = re.compile(r"Decode batch(?: \[\d+\])?[.,]\s*#running-req:\s*(\d+),.*?accept len:\s*"
                   r"([0-9]*\.?[0-9]+)(?:,\s*accept rate:\s*([0-9]*\.?[0-9]+))?")
_ACCEPTED = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
_PROPOSED = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")

_DEF_TAU = ("SGLang's 'accept len' / spec_accept_length counts the bonus token, as specnb's tau "
            "does (tokens per verification step)")
_DEF_RATE_OLD = ("SGLang's server 'accept rate' before PR #23530 was (accepted + bs) / (bs x "
                 "(gamma + 1)): bonus counted as accepted, the current-token slot as drafted; "
                 "specnb's acceptance rate is accepted / drafted = (tau - 1) / gamma")


def is_sglang_log(text: str) -> bool:
    """Whether ``text`` has an SGLang ``Decode batch ... accept len:`` line."""
    return bool(_LINE.search(text))


def _gamma(num_speculative_tokens):
    if num_speculative_tokens is None:
        return None
    if isinstance(num_speculative_tokens, bool) or not isinstance(num_speculative_tokens, int) \
            or num_speculative_tokens < 1:
        raise ValueError(f"num_speculative_tokens must be an integer >= 1, got "
                         f"{num_speculative_tokens!r}")
    return num_speculative_tokens


def read_sglang_log(numbered, num_speculative_tokens: int | None = None) -> EngineAcceptance:
    """tau (and, with gamma, the acceptance rate) from SGLang's decode-stats log lines.

    Parameters
    ----------
    numbered : iterable of (line number, line) or of lines
    num_speculative_tokens : gamma (SGLang's ``--speculative-num-steps`` for a chain draft),
        optional: the acceptance rate (tau - 1) / gamma and the check of the printed rate need
        it.

    Returns
    -------
    EngineAcceptance (no counts: the lines print none).

    Raises
    ------
    ValueError
        no ``Decode batch ... accept len:`` line; an accept len below 1 (SGLang prints 0 when
        speculation is off: such lines are skipped, all of them is an error); a tau above
        gamma + 1.
    """
    k = _gamma(num_speculative_tokens)
    weight = total = 0.0
    lines = skipped_off = 0
    printed = []
    for item in numbered:
        line = item[1] if isinstance(item, tuple) else item
        m = _LINE.search(line)
        if not m:
            continue
        bs, length = int(m.group(1)), float(m.group(2))
        if not math.isfinite(length) or bs > _check.MAX_EXACT_INT:
            where = f"line {item[0]}: " if isinstance(item, tuple) else ""
            raise ValueError(f"{where}#running-req {m.group(1)[:40]}, accept len "
                             f"{m.group(2)[:40]}: not a count SGLang prints (the log is "
                             "damaged or was edited)")
        if length < 1 or bs < 1:
            skipped_off += 1
            continue
        lines += 1
        weight += bs
        total += bs * length
        if m.group(3) is not None:
            printed.append((bs, length, float(m.group(3))))
    if not lines:
        raise ValueError("no SGLang 'Decode batch ... accept len: L' line with L >= 1"
                         + (f" ({skipped_off} with accept len 0: speculation off)"
                            if skipped_off else ""))
    tau = total / weight
    notes = [f"{lines} decode-stats line(s) combined, weighted by #running-req (the lines print "
             "no step counts)"]
    if skipped_off:
        notes.append(f"{skipped_off} line(s) with accept len 0 or no running request skipped")
    definition = [_DEF_TAU]
    rate = math.nan
    if k is not None:
        if tau > k + 1 + 0.005:
            raise ValueError(f"accept len {tau:.2f} exceeds gamma + 1 = {k + 1}: give the "
                             "server's --speculative-num-steps as -k")
        rate = (tau - 1) / k
        if printed:
            p_rate = sum(b * r for b, _, r in printed) / sum(b for b, _, _ in printed)
            p_len = sum(b * L for b, L, _ in printed) / sum(b for b, _, _ in printed)
            old, new = p_len / (k + 1), (p_len - 1) / k
            which = ("the pre-#23530 formula (bonus counted)" if abs(p_rate - old) <
                     abs(p_rate - new) else "accepted / drafted (PR #23530 on)")
            notes.append(f"printed accept rate {p_rate:.2f} matches {which}; specnb's "
                         f"acceptance rate is (tau - 1) / gamma = {rate:.3f}")
        definition.append(_DEF_RATE_OLD)
    else:
        notes.append("acceptance rate needs gamma (-k): (tau - 1) / gamma; SGLang's printed "
                     "accept rate is not used (before PR #23530 it counted the bonus token)")
    return EngineAcceptance("sglang", "server log", tau, rate, (), k, {}, lines,
                            tuple(definition), tuple(notes))


def read_sglang_meta_info(responses, num_speculative_tokens: int | None = None
                          ) -> EngineAcceptance:
    """Exact acceptance from SGLang responses' ``meta_info`` (summed over responses).

    Parameters
    ----------
    responses : iterable of dicts: a response (with ``meta_info``) or a ``meta_info`` itself
    num_speculative_tokens : gamma, optional (checked against the histogram's length and
        proposed / steps; inferred from them when not given)

    Returns
    -------
    EngineAcceptance with vLLM-named counts when every response has its draft counts.

    Raises
    ------
    ValueError
        no response with ``spec_verify_ct`` > 0; a count that is not a whole number >= 0;
        accepted above proposed; a histogram whose sums disagree with the counts.
    """
    k = _gamma(num_speculative_tokens)
    steps = accepted = proposed = completion = 0
    have_acc = have_prop = have_hist = True
    hist_total: list = []
    n = 0
    names = set()
    for r in responses:
        info = r.get("meta_info", r) if isinstance(r, dict) else None
        if not isinstance(info, dict) or not info.get("spec_verify_ct"):
            continue
        n += 1
        s = _count(info, "spec_verify_ct")
        steps += s
        completion += _count(info, "completion_tokens") if "completion_tokens" in info else 0
        acc = next((key for key in _ACCEPTED if key in info), None)
        prop = next((key for key in _PROPOSED if key in info), None)
        names.update(x for x in (acc, prop) if x)
        if acc is None:
            have_acc = False
        else:
            accepted += _count(info, acc)
        if prop is None:
            have_prop = False
        else:
            proposed += _count(info, prop)
        hist = info.get("spec_correct_drafts_histogram")
        if isinstance(hist, list) and all(isinstance(h, int) and h >= 0 for h in hist):
            if sum(hist) != s:
                raise ValueError(f"response {n}: spec_correct_drafts_histogram sums to "
                                 f"{sum(hist)}, not spec_verify_ct {s}")
            hist_total += [0] * (len(hist) - len(hist_total))
            for j, h in enumerate(hist):
                hist_total[j] += h
        else:
            have_hist = False
    if not n:
        raise ValueError("no SGLang meta_info with spec_verify_ct > 0 (speculation off, or "
                         "responses without meta_info: use /generate, or return_meta_info)")
    notes, definition = [f"{n} response(s) summed"], [_DEF_TAU]
    counts = {}
    if have_acc:
        if have_prop and accepted > proposed:
            raise ValueError(f"accepted drafts {accepted} exceed proposed drafts {proposed}")
        tau = 1 + accepted / steps
        counts = {"num_drafts": steps, "num_accepted_tokens": accepted}
    else:
        tau = completion / steps
        notes.append("no draft counts in meta_info: tau = completion_tokens / spec_verify_ct "
                     "(SGLang's spec_accept_length)")
    per_pos: tuple = ()
    if have_hist and hist_total:
        per_pos = tuple(sum(hist_total[j] for j in range(i + 1, len(hist_total))) / steps
                        for i in range(len(hist_total) - 1))
        if have_acc and sum(j * h for j, h in enumerate(hist_total)) != accepted:
            raise ValueError("spec_correct_drafts_histogram disagrees with the accepted drafts")
        counts["num_accepted_tokens_per_pos"] = [
            sum(hist_total[j] for j in range(i + 1, len(hist_total)))
            for i in range(len(hist_total) - 1)]
    gamma = k
    if gamma is None and per_pos:
        gamma = len(per_pos)
        notes.append(f"gamma = {gamma} from the histogram's length")
    elif gamma is None and have_prop and proposed % steps == 0:
        gamma = proposed // steps
        notes.append(f"gamma = {gamma} from proposed drafts / spec_verify_ct")
    rate = math.nan
    if have_acc and have_prop and proposed:
        rate = accepted / proposed
        counts["num_draft_tokens"] = proposed
        definition.append("meta_info's spec_accept_rate is accepted / proposed drafts, as "
                          "specnb's acceptance rate (the server log's 'accept rate' before PR "
                          "#23530 was not)")
    elif not have_acc or not have_prop:
        counts = {}
    if names:
        notes.append("draft counts read from " + ", ".join(sorted(names)))
    return EngineAcceptance("sglang", "meta_info", tau, rate, per_pos, gamma, counts, n,
                            tuple(definition), tuple(notes))


def _count(info: dict, key: str) -> int:
    v = info[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"meta_info {key} must be a whole number >= 0, got {v!r}")
    return v
