"""llama.cpp's ``llama-server`` acceptance lines, read into specnb's numbers.

``server_slot::print_timings`` (``tools/server/server-context.cpp``) prints, when a request
that drafted finishes, one line per request (per slot task), in one of these forms (newest
last; llama.cpp's source at the commits named in ``tests/cases/llamacpp/README.md``):

* ``draft acceptance rate = 0.57143 (    4 accepted /     7 generated)``
* ``draft acceptance = 0.64479 (  167 accepted /   259 generated)``
* the same followed by ``, mean len =  2.92`` (``mean_acc_len = 1 + n_draft_accepted /
  n_draft_verif_steps``), or by ``, mean acceptance length =  2.92, acceptance rate per
  position = (0.805, 0.632, 0.483)`` (PR #24536).

"generated" counts the draft tokens proposed and "accepted" those the target kept: the ratio
is specnb's acceptance rate (accepted / drafted). llama.cpp's drafts vary in length
(``--draft-max``, ``--draft-min``, ``--draft-p-min``), so tau (1 + accepted / verification
steps) needs the number of steps: it is the printed mean length where there is one (steps =
accepted / (mean length - 1), from a length printed to 2 decimals, so approximate), and
unknown otherwise. Lines are summed (each is one request's own counts).
"""

from __future__ import annotations

import math
import re

from . import EngineAcceptance

__all__ = ["LOG_MARK", "read_llamacpp_log", "is_llamacpp_log"]

LOG_MARK = "draft acceptance"
_LINE = re.compile(r"draft acceptance(?: rate)?\s*=\s*([0-9]*\.?[0-9]+)\s*\(\s*(\d+)\s*accepted\s*"
                   r"/\s*(\d+)\s*generated\s*\)(.*)$")
_LEN = re.compile(r"mean (?:acceptance )?len(?:gth)?\s*=\s*([0-9]*\.?[0-9]+)")
_POS = re.compile(r"(?:acceptance rate per position|acc per pos)\s*=\s*\(([^)]*)\)")
_DEF = ("llama.cpp's 'draft acceptance' is accepted / generated draft tokens, specnb's "
        "acceptance rate; its 'mean len' is 1 + accepted / verification steps, specnb's tau")


def is_llamacpp_log(text: str) -> bool:
    """Whether ``text`` has a llama.cpp ``draft acceptance ... accepted / ... generated`` line."""
    return any(_LINE.search(line) for line in text.splitlines() if LOG_MARK in line)


def read_llamacpp_log(numbered, num_speculative_tokens: int | None = None) -> EngineAcceptance:
    """Acceptance from llama-server's per-request ``draft acceptance`` lines, summed.

    Parameters
    ----------
    numbered : iterable of (line number, line) or of lines
    num_speculative_tokens : ``--draft-max`` (gamma), optional: bounds the per-position list
        and is reported; llama.cpp's drafts may be shorter.

    Returns
    -------
    EngineAcceptance; counts (vLLM names) when every line prints a mean length
    (``num_drafts`` then estimated, noted).

    Raises
    ------
    ValueError
        no such line; accepted above generated on a line; a printed ratio that disagrees with
        its counts; a mean length below 1.
    """
    acc = gen = 0
    drafts = 0.0
    per_pos: list = []
    all_len = True
    n = 0
    for item in numbered:
        lineno, line = item if isinstance(item, tuple) else (n + 1, item)
        m = _LINE.search(line)
        if not m:
            continue
        ratio, a, g, rest = float(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
        if a > g:
            raise ValueError(f"line {lineno}: {a} accepted exceeds {g} generated")
        if g and abs(a / g - ratio) > 5e-5 + 1e-9:
            raise ValueError(f"line {lineno}: printed {ratio} disagrees with {a} / {g} = "
                             f"{a / g:.5f}: the line is damaged")
        n += 1
        acc, gen = acc + a, gen + g
        length = _LEN.search(rest)
        if length is None:
            all_len = False
            continue
        L = float(length.group(1))
        if L < 1:
            raise ValueError(f"line {lineno}: mean length {L} is below 1")
        d = a / (L - 1) if L > 1 else (g / num_speculative_tokens if num_speculative_tokens
                                          else math.nan)
        drafts += d
        pos = _POS.search(rest)
        if pos:
            rates = [float(x) for x in pos.group(1).split(",") if x.strip()]
            per_pos += [0.0] * (len(rates) - len(per_pos))
            for i, r in enumerate(rates):
                per_pos[i] += r * d
    if not n:
        raise ValueError("no llama.cpp 'draft acceptance = R (A accepted / G generated)' line")
    notes = [f"{n} request line(s) summed"]
    rate = acc / gen if gen else math.nan
    counts = {}
    tau = math.nan
    if all_len and drafts == drafts and drafts > 0:
        tau = 1 + acc / drafts
        counts = {"num_drafts": drafts, "num_draft_tokens": gen, "num_accepted_tokens": acc}
        if per_pos:
            counts["num_accepted_tokens_per_pos"] = per_pos
        notes.append("verification steps = accepted / (mean length - 1) per line, from a "
                     "length printed to 2 decimals (estimated)")
    else:
        notes.append("tau unknown: these lines print no mean length (older llama.cpp), and "
                     "llama.cpp's drafts vary in length, so steps are not drafted / gamma")
    return EngineAcceptance("llama.cpp", "server log", tau, rate,
                            tuple(x / drafts for x in per_pos) if counts and per_pos else (),
                            num_speculative_tokens, counts, n, (_DEF,), tuple(notes))
