"""A continuous-batching engine simulated with and without speculation (L2.5: above
:mod:`specnb.serving`, below :mod:`specnb.advise`): vLLM V1's scheduler rules, step times from
the serving model, acceptance drawn from rates or an acceptance profile. Pure numpy."""
