"""vLLM's rules as plain functions over one :class:`~specnb.vllm.rules.context.Context`, run
in the order of :data:`RULES`, then :data:`CONTEXT_RULES`; ``values`` fills ``ctx.values``,
``method`` sets ``ctx.method``."""

from __future__ import annotations

from . import keys, method, serve, switches, target, values
from .context import Context

#: The string rules, in order: keys, values, method, then what the method decides.
RULES = (
    ("duplicate keys", keys.duplicates),
    ("hyphenated keys", keys.hyphens),
    ("unknown keys", keys.keys),
    ("values", values.values),
    ("placeholder model", method.placeholder_model),
    ("method", method.method),
    ("tensor parallel", switches.tensor_parallel),
    ("model", method.model),
    ("method bounds", values.method_bounds),
    ("draft length", method.draft_tokens),
    ("huge draft length", values.huge_gamma),
    ("quantization", switches.quantization),
    ("n-gram window", method.ngram_window),
    ("suffix decoding", method.suffix),
    ("method switches", switches.method_switches),
    ("synthetic acceptance", switches.synthetic),
    ("schedule", switches.schedule),
)

#: Rules that need the served model or the serve line (they skip themselves without).
CONTEXT_RULES = (
    ("target", target.target),
    ("serve line", serve.serve),
)


def run(ctx: Context) -> Context:
    """Every rule over ``ctx`` in order (after "tensor parallel", only while a method was
    resolved); returns ``ctx`` with its findings."""
    last = [name for name, _ in RULES].index("tensor parallel")
    for i, (_, rule) in enumerate(RULES):
        if not ctx.stop or i <= last:
            rule(ctx)
    for _, rule in CONTEXT_RULES:
        rule(ctx)
    return ctx


__all__ = ["Context", "RULES", "CONTEXT_RULES", "run"]
