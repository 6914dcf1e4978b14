"""Request logs: a JSON-lines file of served requests, read into token ids without torch, for
``specnb replay`` (n-gram / suffix replay, draft models and heads), the simulator's
``--requests LOG`` and ``specnb measure --logged``.

One JSON object a line (blank lines are skipped; a UTF-8 BOM is not data). Three row shapes,
which may be mixed in one file:

* **text** (what ``measure --logged`` reads): ``prompt`` (non-empty string) and ``response``
  (the served text, non-empty); the prompt is encoded as :func:`encode_prompt` says (the
  tokenizer's chat template when it has one), the response without special tokens;
* **ids**: ``prompt_ids`` and ``response_ids``, lists of token ids (ints >= 0, non-empty),
  used as they are (either may also stand in for ``prompt`` / ``response`` in a text row: ids
  win over text, as a served response re-encoded need not give the same ids);
* **chat** (OpenAI style): ``messages``, a list of ``{"role": ..., "content": "..."}``, and the
  assistant's reply as ``response`` (a string), as ``choices[0].message.content`` (a
  chat-completion response object) or as the last message when its role is ``assistant``;
  the messages before the reply are rendered with the tokenizer's chat template and the
  generation prompt (without a template: the contents joined by newlines).

Optional fields: ``task`` (a string: the family a profile is split by), ``id`` (or
``request_id``; default ``"<task>-<n>"`` counting each task's rows from 00, ``"line-<n>"``
without a task), ``temperature`` (>= 0), and the arrival time as ``arrival_time``,
``timestamp`` or ``created`` (seconds as a number, or an ISO-8601 string; seconds since the
epoch).

Python API (what other parts build on)::

    log = request_log.read("requests.jsonl", tokenizer=None, skip_bad=False)
    for r in log:            # Request: id, task, prompt_ids, response_ids (int64 arrays),
        r.prompt_len, r.response_len, r.arrival_time, r.temperature, r.line
    log.skipped              # ((line, message), ...) with skip_bad=True
    log.tasks                # the tasks present, sorted
    lens = request_log.read_lengths("requests.jsonl", tokenizer=None)  # the simulator's:
        lens.prompt_len, lens.response_len, lens.arrival_time, lens.lines  # token counts too

:func:`read_lengths` reads the same rows for their lengths only, and a fourth shape: token
**counts**, the prompt's under one of :data:`PROMPT_COUNT_KEYS` (or ``usage.prompt_tokens``,
an OpenAI response's), the response's under :data:`RESPONSE_COUNT_KEYS` (or
``usage.completion_tokens``); each side is read from its ids, else its count, else its text.

:func:`load_prompts` (prompt files and ``measure --logged`` traffic as dicts) and the bundled
files' paths live here too, so that every reader of these files shares one parser.
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _check
from .data import DATA_DIR

__all__ = ["BUNDLED_PROMPTS", "BUNDLED_LOGGED", "BUNDLED_TOKENIZER", "Request", "RequestLog",
           "Tokenizer", "read", "Lengths", "read_lengths", "load_tokenizer", "encode_prompt", "load_prompts",
           "check_file", "jsonl_lines"]

#: Bundled prompts: held-out standard-library text (``python -m specnb.measure.train --prompts``).
BUNDLED_PROMPTS = DATA_DIR / "prompts" / "stdlib_heldout.jsonl"
#: The bundled target's own responses to every held-out prompt (greedy and T = 1), as a request
#: log would hold them (``scripts/make_logged_responses.py``; provenance in data/prompts/README.md).
BUNDLED_LOGGED = DATA_DIR / "prompts" / "stdlib_heldout_responses.jsonl"
#: The bundled models' tokenizer (``tokenizer.json`` + ``tokenizer_config.json``).
BUNDLED_TOKENIZER = DATA_DIR / "models" / "tokenizer"

_ARRIVAL_KEYS = ("arrival_time", "timestamp", "created")
#: Keys a row may give its prompt's token count under (first found wins; then an OpenAI
#: ``usage`` object's ``prompt_tokens``): read by :func:`read_lengths` only.
PROMPT_COUNT_KEYS = ("input_len", "prompt_len", "prompt_tokens", "num_prompt_tokens")
#: ... the response's (tokens generated; then ``usage.completion_tokens``).
RESPONSE_COUNT_KEYS = ("output_len", "response_len", "completion_tokens", "num_output_tokens")


def check_file(path, what: str = "prompts file", bundled: Path = BUNDLED_PROMPTS) -> Path:
    """``path`` as a Path to an existing file, or a pipe or character device (process
    substitution ``<(zcat log.jsonl.gz)``, ``/dev/stdin``: :func:`jsonl_lines` reads it once);
    ``bundled`` is the bundled file of its kind that the message names
    (:data:`BUNDLED_PROMPTS`; a request log's is :data:`BUNDLED_LOGGED`).

    Raises
    ------
    FileNotFoundError
        It does not exist, it is a folder, or something else that is not a file (a socket:
        the message says which, and names ``bundled``).
    """
    p = Path(path).expanduser()
    if p.is_dir():
        raise FileNotFoundError(f"{what} {str(path)!r} is a folder; give the JSON-lines file "
                                f"itself (the bundled one is {bundled})")
    if p.is_file() or p.is_fifo() or p.is_char_device():
        return p
    if p.exists():
        raise FileNotFoundError(f"{what} {str(path)!r} is not a file, a pipe or a device; "
                                f"give the JSON-lines file (the bundled one is {bundled})")
    raise FileNotFoundError(f"{what} {str(path)!r} does not exist; the bundled one is "
                            f"{bundled}")


#: The text of each pipe or device read in this process, by path: a pipe can be read once
#: only, and a command may read its log twice (checked first, then used).
_STREAM_TEXT: dict[str, str] = {}


def _read_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a BOM dropped); a pipe or device is read once per process
    (:data:`_STREAM_TEXT`)."""
    if path.is_file():
        return path.read_text(encoding="utf-8-sig")
    key = str(path)
    if key not in _STREAM_TEXT:
        _STREAM_TEXT[key] = path.read_bytes().decode("utf-8-sig")
    return _STREAM_TEXT[key]


def jsonl_lines(path: Path):
    """``(line number from 1, text)`` of each non-blank line of a JSON-lines file in UTF-8 (a
    BOM dropped): the one reader of request logs (``replay``, ``simulate --requests``); a
    pipe or device is read once per process, its text kept for a second read.

    Raises
    ------
    ValueError
        the file is not UTF-8 (:func:`specnb._check.utf8_error`: the byte and its offset).
    OSError
        the file cannot be read.
    """
    try:
        text = _read_text(path)
    except UnicodeDecodeError as exc:
        raise _check.utf8_error(str(path), exc, "give JSON lines in UTF-8") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield n, line


def _json_line(path, n: int, line: str):
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{n}: not valid JSON ({exc.msg}; column {exc.colno})") from None


# --- prompt files and measure --logged traffic (dicts) --------------------------------------

def _check_logged(path, n, obj) -> None:
    """Validate a logged-traffic record's ``response``, ``temperature`` and ``response_ids``."""
    r = obj.get("response")
    if not isinstance(r, str) or not r:
        raise ValueError(f"{path}:{n}: 'response' must be a non-empty string (the response the "
                         f"target served for this prompt), got {r!r}")
    t = obj.get("temperature")
    if "temperature" not in obj:
        raise ValueError(f"{path}:{n}: a record with a 'response' must give the 'temperature' "
                         "it was served at (0 = greedy), got none")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not (t >= 0 and _check.finite(t)):
        raise ValueError(f"{path}:{n}: 'temperature' must be a number >= 0 (0 = greedy), got {t!r}")
    ids = obj.get("response_ids")
    if ids is not None and (not isinstance(ids, list) or not ids or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)):
        raise ValueError(f"{path}:{n}: 'response_ids' must be a non-empty list of token ids "
                         f"(ints >= 0), got {str(ids)[:80]}")


def _read_records(path: Path, logged: bool) -> list[dict]:
    """Every record of a prompts file, validated line by line (see :func:`load_prompts`)."""
    items = []
    for n, line in jsonl_lines(path):
        obj = _json_line(path, n, line)
        if not isinstance(obj, dict) or not isinstance(obj.get("task"), str) \
                or not isinstance(obj.get("prompt"), str) or not obj["prompt"]:
            got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise ValueError(f"{path}:{n}: each line must be a JSON object with string 'task' and "
                             f"non-empty string 'prompt'; got keys {got}")
        if logged or "response" in obj:
            if logged and "response" not in obj:
                raise ValueError(f"{path}:{n}: logged traffic needs each record's 'response' "
                                 "(the served text) and 'temperature'; this record has none")
            _check_logged(path, n, obj)
        items.append(obj)
    return items


def _default_ids(items: list[dict]) -> None:
    """Give each prompt without an ``id`` the id ``"<task>-<n>"`` (n counts its task's
    prompts from 00, in order)."""
    counts = {}
    for i in items:
        k = counts[i["task"]] = counts.get(i["task"], -1) + 1
        i.setdefault("id", f"{i['task']}-{k:02d}")


def load_prompts(path=None, *, tasks=None, per_task: int | None = None,
                 logged: bool = False) -> list[dict]:
    """Read prompts from a JSON-lines file (one object a line, with at least ``task`` and
    ``prompt``; ``id`` defaults to ``"<task>-<n>"``).

    Logged traffic (``logged=True``, or any record that has a ``response``): each record also
    carries ``response``, the text the target served (non-empty), and ``temperature``, the
    temperature it was served at (>= 0, 0 = greedy); optionally ``response_ids``, the served
    token ids (used instead of re-encoding ``response``, which need not give the same ids).

    Parameters
    ----------
    path : str or Path, optional
        Defaults to the bundled :data:`BUNDLED_PROMPTS` (held-out standard-library text), or
        :data:`BUNDLED_LOGGED` with ``logged``.
    tasks : iterable of str, optional
        Keep only these task families (in the given order).
    per_task : int >= 0, optional
        Keep the first ``per_task`` prompts of each family (0 or None: all); for logged
        records, the first ``per_task`` of each family at each served temperature (so a log
        served at T = 0 and T = 1 keeps both).

    Returns
    -------
    list of dict, grouped by task in file (or ``tasks``) order.

    Raises
    ------
    FileNotFoundError
        No such file, or a folder.
    ValueError
        A line that is not a JSON object with string ``task`` and ``prompt``; with ``logged``
        a record without ``response``; a record whose ``response`` is empty or not a string,
        whose ``temperature`` is missing or negative, or whose ``response_ids`` are not ids; an
        unknown task in ``tasks``; ``per_task`` < 0; no prompt left.
    """
    bundled = BUNDLED_LOGGED if logged else BUNDLED_PROMPTS
    path = check_file(path if path is not None else bundled,
                      "logged traffic" if logged else "prompts file", bundled)
    items = _read_records(path, logged)
    _default_ids(items)
    order = list(dict.fromkeys(i["task"] for i in items))
    if tasks is not None:
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        unknown = [t for t in tasks if t not in order]
        if unknown:
            raise ValueError(f"tasks {unknown} not in {path}; its tasks are {order}")
        order = tasks
    if per_task is not None:
        per_task = _check.scalar_int("per_task (--per-task on the command line; 0 or None = all "
                                     "prompts)", per_task, lo=0)
    out = []
    for t in order:
        group = [i for i in items if i["task"] == t]
        if not per_task:
            out.extend(group)
            continue
        seen = {}  # logged records: per_task at each temperature; prompts: one key
        for i in group:
            key = float(i["temperature"]) if "response" in i else None
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= per_task:
                out.append(i)
    if not out:
        raise ValueError(f"no prompts left in {path}")
    return out


# --- tokenizer files (no torch, no transformers) --------------------------------------------

class Tokenizer:
    """A tokenizer from its files: ``tokenizer.json`` (the ``tokenizers`` library) and
    ``tokenizer_config.json`` (special tokens, ``chat_template``; or a ``chat_template.jinja``
    beside it). Use :func:`load_tokenizer`."""

    def __init__(self, path: Path, backend, config: dict, chat_template: str | None):
        self.path = path
        self._tok = backend
        self.config = config
        self.chat_template = chat_template
        self.vocab_size = int(backend.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str, *, special: bool) -> list[int]:
        """Token ids of ``text`` (with the tokenizer's special tokens when ``special``)."""
        return self._tok.encode(text, add_special_tokens=special).ids

    def render(self, messages: list, *, add_generation_prompt: bool = True) -> str:
        """``messages`` through the chat template, as transformers' ``apply_chat_template``
        renders it (jinja2 sandbox, ``trim_blocks``, ``lstrip_blocks``, the special tokens
        of ``tokenizer_config.json`` as variables)."""
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(msg):
            raise ValueError(f"the chat template of {self.path} refused the messages: {msg}")

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = lambda x, indent=None, **k: json.dumps(x, indent=indent,
                                                                       ensure_ascii=False)
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: _dt.datetime.now().strftime(fmt)
        special = {k: (v.get("content") if isinstance(v, dict) else v)
                   for k, v in self.config.items() if k.endswith("_token")}
        return env.from_string(self.chat_template).render(
            messages=messages, add_generation_prompt=add_generation_prompt, **special)


def load_tokenizer(path=None) -> Tokenizer:
    """The tokenizer in folder ``path`` (or its ``tokenizer.json``); None: the bundled one
    (:data:`BUNDLED_TOKENIZER`). Needs the ``tokenizers`` package (``pip install
    'specnb[replay]'``), and jinja2 to render a chat template.

    Raises
    ------
    ValueError
        No ``tokenizer.json`` there, or a file ``tokenizers`` cannot read (naming the path).
    """
    p = Path(path if path is not None else BUNDLED_TOKENIZER).expanduser()
    folder = p.parent if p.is_file() else p
    file = p if p.is_file() else p / "tokenizer.json"
    if not file.is_file():
        raise ValueError(f"tokenizer {str(path)!r}: no tokenizer.json there (give a local folder "
                         f"holding tokenizer.json, e.g. {BUNDLED_TOKENIZER}, or the file itself)")
    try:
        import tokenizers
    except ImportError:
        raise ValueError("reading text rows needs the tokenizers package: pip install "
                         "'specnb[replay]' (rows with prompt_ids and response_ids need none)"
                         ) from None
    try:
        backend = tokenizers.Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises its own Exception type
        raise ValueError(f"tokenizer {str(file)!r} is not readable by tokenizers ({exc})"
                         ) from None
    config = {}
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        try:
            config = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{cfg} is not readable JSON ({exc})") from None
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: transformers uses "default"
        template = {t.get("name"): t.get("template") for t in template}.get("default")
    jinja_file = folder / "chat_template.jinja"
    if not template and jinja_file.is_file():
        template = jinja_file.read_text(encoding="utf-8")
    return Tokenizer(file, backend, config, template or None)


def encode_prompt(tokenizer: Tokenizer, prompt=None, messages=None) -> list[int]:
    """Prompt token ids as ``measure`` encodes them: ``messages`` (a chat) or ``prompt`` (one
    user message) through the chat template with the generation prompt when the tokenizer
    has one, then encoded without special tokens; without a template the plain text
    (``prompt``, or the messages' contents joined by newlines) with the tokenizer's special
    tokens."""
    if messages is None:
        messages = [{"role": "user", "content": prompt}]
    if tokenizer.chat_template:
        return tokenizer.encode(tokenizer.render(messages), special=False)
    text = prompt if prompt is not None else "\n".join(m["content"] for m in messages)
    return tokenizer.encode(text, special=True)


# --- request logs (token ids) ---------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Request:
    """One served request of a log.

    Attributes
    ----------
    id : str
    task : str or None
    prompt_ids, response_ids : 1-D int64 arrays (read-only), at least one token each
    arrival_time : float seconds (since the epoch for ISO strings) or None
    temperature : float >= 0 or None (not logged)
    line : the 1-based line of the file it came from
    """

    id: str
    task: str | None
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    arrival_time: float | None = None
    temperature: float | None = None
    line: int = 0

    @property
    def prompt_len(self) -> int:
        return int(self.prompt_ids.size)

    @property
    def response_len(self) -> int:
        return int(self.response_ids.size)

    @property
    def token_ids(self) -> np.ndarray:
        """Prompt then response (the sequence a replay steps along)."""
        return np.concatenate([self.prompt_ids, self.response_ids])


@dataclass(frozen=True, eq=False)
class RequestLog:
    """The requests of a log in file order, and the rows skipped (``skip_bad``) as
    ``(line, message)`` pairs. Iterate it, index it, ``len`` it."""

    path: str
    requests: tuple
    skipped: tuple = ()
    tokenizer: str | None = None

    def __len__(self) -> int:
        return len(self.requests)

    def __iter__(self):
        return iter(self.requests)

    def __getitem__(self, i):
        return self.requests[i]

    @property
    def tasks(self) -> tuple:
        """The distinct tasks present (None left out), sorted."""
        return tuple(sorted({r.task for r in self.requests if r.task is not None}))


def _ids(where: str, key: str, value, vocab: int | None) -> np.ndarray:
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: {key!r} must be a non-empty list of token ids (ints >= 0), "
                         f"got {str(value)[:80]}")
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{where}: {key!r} must be a list of token ids (ints >= 0), got "
                         f"{str(value)[:80]}")
    if arr.min() < 0:
        raise ValueError(f"{where}: {key!r} holds a negative token id {int(arr.min())}")
    if vocab is not None and arr.max() >= vocab:
        raise ValueError(f"{where}: {key!r} holds token id {int(arr.max())}, outside the "
                         f"tokenizer's vocabulary (size {vocab}); give the tokenizer the log was "
                         "served with (--tokenizer)")
    arr = arr.astype(np.int64, copy=False)
    arr.setflags(write=False)
    return arr


def _arrival(where: str, obj: dict):
    for key in _ARRIVAL_KEYS:
        if key in obj and obj[key] is not None:
            v = obj[key]
            if isinstance(v, str):
                try:
                    t = _dt.datetime.fromisoformat(v)
                except ValueError:
                    raise ValueError(f"{where}: {key!r} {v!r} is neither seconds nor an ISO-8601 "
                                     "time") from None
                if t.tzinfo is None:
                    t = t.replace(tzinfo=_dt.timezone.utc)
                return t.timestamp()
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not _check.finite(v):
                raise ValueError(f"{where}: {key!r} must be seconds (a finite number) or an "
                                 f"ISO-8601 string, got {v!r}")
            return float(v)
    return None


def _reply(where: str, obj: dict, has_response: bool):
    """``(messages before the reply, reply text or None)`` of a chat row; ``has_response``:
    the row gives the response otherwise (ids, or a count), so every message is prompt."""
    msgs = obj["messages"]
    if not isinstance(msgs, list) or not msgs or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str) for m in msgs):
        raise ValueError(f"{where}: 'messages' must be a non-empty list of objects with string "
                         "'role' and 'content'")
    reply = obj.get("response")
    if reply is None and isinstance(obj.get("choices"), list) and obj["choices"]:
        c = obj["choices"][0]
        reply = (c.get("message") or {}).get("content") if isinstance(c, dict) else None
        if reply is None and not has_response:
            raise ValueError(f"{where}: 'choices[0].message.content' (the assistant's reply) "
                             "is missing")
    if reply is None and not has_response:
        if msgs[-1]["role"] != "assistant":
            raise ValueError(f"{where}: a chat row needs the assistant's reply: 'response', "
                             "'response_ids', 'choices' or a last message with role 'assistant'")
        reply, msgs = msgs[-1]["content"], msgs[:-1]
        if not msgs:
            raise ValueError(f"{where}: 'messages' holds only the assistant's reply, no prompt")
    return msgs, reply


def _need(tok, where: str) -> Tokenizer:
    if tok is None:
        raise ValueError(f"{where}: a text or chat row needs a tokenizer (the bundled one, or "
                         "a folder: --tokenizer) and the tokenizers package (pip install "
                         "'specnb[replay]')")
    return tok


def _prompt(where: str, obj: dict, msgs, tok, vocab, counts: str = "") -> np.ndarray:
    """The prompt's ids: ``prompt_ids``, else ``messages`` (``msgs``) or ``prompt`` encoded
    by ``tok()`` (a callable: the tokenizer is loaded only for a text row)."""
    if "prompt_ids" in obj:
        return _ids(where, "prompt_ids", obj["prompt_ids"], vocab)
    if msgs is not None:
        return _ids(where, "messages", encode_prompt(_need(tok(), where), messages=msgs), vocab)
    p = obj.get("prompt")
    if not isinstance(p, str) or not p:
        raise ValueError(f"{where}: a row needs its prompt: 'prompt' (non-empty text), "
                         f"'prompt_ids' or 'messages'{counts}; got keys {sorted(obj)}")
    return _ids(where, "prompt", encode_prompt(_need(tok(), where), prompt=p), vocab)


def _response(where: str, obj: dict, reply, tok, vocab, counts: str = "") -> np.ndarray:
    """The response's ids: ``response_ids``, else the reply text encoded by ``tok()``."""
    if "response_ids" in obj:
        return _ids(where, "response_ids", obj["response_ids"], vocab)
    if reply is None:
        raise ValueError(f"{where}: a row needs the served response: 'response' (text) or "
                         f"'response_ids'{counts}; got keys {sorted(obj)}")
    if not isinstance(reply, str) or not reply:
        raise ValueError(f"{where}: the response must be a non-empty string, got {reply!r}")
    ids = _need(tok(), where).encode(reply, special=False)
    if not ids:
        raise ValueError(f"{where}: the response encodes to no token")
    return _ids(where, "response", ids, vocab)


def _request(where: str, n: int, obj, tok, counts: dict) -> Request:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: each line must be a JSON object, got {type(obj).__name__}")
    task = obj.get("task")
    if task is not None and not isinstance(task, str):
        raise ValueError(f"{where}: 'task' must be a string, got {task!r}")
    temp = obj.get("temperature")
    if temp is not None and (isinstance(temp, bool) or not isinstance(temp, (int, float))
                             or not (temp >= 0 and _check.finite(temp))):
        raise ValueError(f"{where}: 'temperature' must be a number >= 0 (0 = greedy), "
                         f"got {temp!r}")
    vocab = None if tok is None else tok.vocab_size
    msgs, reply = (None, obj.get("response"))
    if "messages" in obj and "prompt_ids" not in obj:
        msgs, reply = _reply(where, obj, "response_ids" in obj)
    prompt = _prompt(where, obj, msgs, lambda: tok, vocab)
    response = _response(where, obj, reply, lambda: tok, vocab)
    rid = obj.get("id", obj.get("request_id"))
    if rid is None:
        if task is None:
            rid = f"line-{n}"
        else:
            k = counts[task] = counts.get(task, -1) + 1
            rid = f"{task}-{k:02d}"
    return Request(str(rid), task, prompt, response, _arrival(where, obj),
                   None if temp is None else float(temp), n)


def read(path=None, *, tokenizer=None, skip_bad: bool = False) -> RequestLog:
    """Read a request log (the module docstring gives the rows).

    Parameters
    ----------
    path : str or Path, optional
        The JSON-lines file; default :data:`BUNDLED_LOGGED`.
    tokenizer : folder, ``tokenizer.json`` path, :class:`Tokenizer`, None (the bundled one)
        or False (none: rows with ids only, unbounded by a vocabulary; None without the
        ``tokenizers`` package acts so too)
        Encodes text rows and bounds every token id by its vocabulary.
    skip_bad : bool
        Skip rows that fail (counted in ``skipped`` with their line and message) instead of
        raising.

    Returns
    -------
    RequestLog

    Raises
    ------
    FileNotFoundError
        No such file, or a folder.
    ValueError
        A bad row, ``"<path>:<line>: ..."`` naming what is wrong (without ``skip_bad``); a log
        with no request (empty, or every row skipped); a file that is not UTF-8; an unreadable
        tokenizer.
    """
    p = check_file(path if path is not None else BUNDLED_LOGGED, "request log", BUNDLED_LOGGED)
    if tokenizer is None and importlib.util.find_spec("tokenizers") is None:
        tok = None  # without the replay extra: id rows only, unbounded; text rows say so
    else:
        tok = (tokenizer if isinstance(tokenizer, Tokenizer) or tokenizer is False
               else load_tokenizer(tokenizer)) or None
    counts, reqs, skipped = {}, [], []
    for n, line in jsonl_lines(p):
        where = f"{p}:{n}"
        try:
            reqs.append(_request(where, n, _json_line(p, n, line), tok, counts))
        except ValueError as exc:
            if not skip_bad:
                raise
            skipped.append((n, str(exc)))
    if not reqs:
        what = (f"every row was bad ({len(skipped)} skipped; the first: {skipped[0][1]})"
                if skipped else "it is empty")
        raise ValueError(f"request log {str(p)!r} holds no request: {what}")
    return RequestLog(str(p), tuple(reqs), tuple(skipped),
                      None if tok is None else str(tok.path))


# --- lengths only (the simulator's --requests) ----------------------------------------------

@dataclass(frozen=True, eq=False)
class Lengths:
    """The token lengths and arrival times of a log's rows, in file order.

    Attributes
    ----------
    path : str
    prompt_len, response_len : int64 arrays (n,), >= 1
    arrival_time : tuple of float seconds or None (no time) per row
    lines : tuple of the rows' 1-based lines
    tokenizer : the tokenizer that encoded text rows (its path), or None (none encoded)
    encoded : how many rows had a side read from text
    """

    path: str
    prompt_len: np.ndarray
    response_len: np.ndarray
    arrival_time: tuple
    lines: tuple
    tokenizer: str | None = None
    encoded: int = 0

    def __len__(self) -> int:
        return int(self.prompt_len.size)


def _count(where: str, obj: dict, keys, usage_key: str):
    """The token count a row gives under ``keys`` (first found) or ``usage[usage_key]``;
    None when it gives none. ValueError for a count that is not an int in [1, 2**53]."""
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
    key = next((k for k in keys if obj.get(k) is not None), None)
    v = obj[key] if key is not None else usage.get(usage_key)
    if v is None:
        return None
    name = key or f"usage.{usage_key}"
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not _check.finite(v)
            or v != int(v) or not 1 <= v <= _check.MAX_EXACT_INT):
        raise ValueError(f"{where}: {name!r} (a token count) must be an integer in [1, 2**53], "
                         f"got {str(v)[:40]}")
    return int(v)


def read_lengths(path=None, *, tokenizer=None) -> Lengths:
    """The prompt and response lengths (tokens) and arrival times of every row of a request
    log (the module docstring gives the rows: text, ids, chat, and token counts here), each
    side from its ids, else its count, else its text encoded as :func:`read` encodes it.

    Parameters
    ----------
    path : str or Path, optional
        The JSON-lines file; default :data:`BUNDLED_LOGGED`.
    tokenizer : folder, ``tokenizer.json`` path, :class:`Tokenizer`, None or False
        Encodes text rows. None: the bundled one (:data:`BUNDLED_TOKENIZER`), loaded only
        when a row needs it, and bounding no id (the log's vocabulary is not known); one given
        bounds every id by its vocabulary, as :func:`read`; False: none, text rows refused.

    Raises
    ------
    FileNotFoundError
        No such file, or a folder.
    ValueError
        A bad row (``"<path>:<line>: ..."``: no prompt or response in any form, a count that
        is not an int >= 1, a bad time, a text row without a tokenizer); an empty log; a file
        that is not UTF-8; an unreadable tokenizer.
    """
    p = check_file(path if path is not None else BUNDLED_LOGGED, "request log")
    given = tokenizer is not None and tokenizer is not False
    tok = (tokenizer if isinstance(tokenizer, Tokenizer) else load_tokenizer(tokenizer)
           ) if given else None
    vocab = tok.vocab_size if given else None
    cache = {}

    def need():
        if given or tokenizer is False:
            return tok
        if "tok" not in cache:
            cache["tok"] = load_tokenizer(None) if importlib.util.find_spec(
                "tokenizers") is not None else None
        return cache["tok"]

    ins, outs, times, lines, encoded = [], [], [], [], 0
    hint_p = f", or a token count ({', '.join(PROMPT_COUNT_KEYS)}, usage.prompt_tokens)"
    hint_r = f", or a token count ({', '.join(RESPONSE_COUNT_KEYS)}, usage.completion_tokens)"
    for n, line in jsonl_lines(p):
        where = f"{p}:{n}"
        obj = _json_line(p, n, line)
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: each line must be a JSON object, got "
                             f"{type(obj).__name__}")
        ni = None if "prompt_ids" in obj else _count(where, obj, PROMPT_COUNT_KEYS,
                                                     "prompt_tokens")
        no = None if "response_ids" in obj else _count(where, obj, RESPONSE_COUNT_KEYS,
                                                       "completion_tokens")
        msgs, reply = None, obj.get("response")
        if "messages" in obj and "prompt_ids" not in obj and (ni is None or no is None):
            msgs, reply = _reply(where, obj, "response_ids" in obj or no is not None)
        text = False
        if ni is None:
            ni = _prompt(where, obj, msgs, need, vocab, hint_p).size
            text = "prompt_ids" not in obj
        if no is None:
            no = _response(where, obj, reply, need, vocab, hint_r).size
            text = text or "response_ids" not in obj
        encoded += text
        ins.append(int(ni))
        outs.append(int(no))
        times.append(_arrival(where, obj))
        lines.append(n)
    if not ins:
        raise ValueError(f"request log {str(p)!r} holds no request: it is empty")
    used = tok if given else cache.get("tok")
    return Lengths(str(p), np.array(ins, dtype=np.int64), np.array(outs, dtype=np.int64),
                   tuple(times), tuple(lines),
                   None if used is None or not encoded else str(used.path), encoded)
