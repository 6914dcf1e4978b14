"""JSON-value checks shared by the checker, the builder and the renderers."""

from __future__ import annotations

_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_values(value, where: str) -> None:
    """Raise TypeError naming the first value that JSON (and so vLLM's CLI) cannot hold."""
    if isinstance(value, dict):
        for k, v in value.items():
            _json_values(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _json_values(v, f"{where}[{i}]")
    elif not isinstance(value, _JSON_SCALARS):
        hint = (" (convert numpy numbers with int() / float())"
                if type(value).__module__ == "numpy" else "")
        raise TypeError(f"{where} must be a JSON value (str, int, float, bool, None, list, "
                        f"dict), got {type(value).__module__}.{type(value).__name__} "
                        f"{value!r}{hint}")

