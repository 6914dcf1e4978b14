"""specnb.cli: one entry point; registering every subcommand loads no heavy library."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from specnb.cli import COMMAND_MODULES, Parser, build_parser, main


def test_every_command_module_registers():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    assert {"run", "measure", "config", "metrics", "bench", "plan", "replay",
            "simulate"} <= set(commands)
    assert COMMAND_MODULES == ["specnb.cli.run", "specnb.cli.measure", "specnb.cli.vllm",
                               "specnb.cli.plan", "specnb.cli.replay", "specnb.cli.simulate"]


def test_building_the_parser_loads_no_torch_transformers_papermill_or_matplotlib():
    code = ("import sys, specnb.cli; specnb.cli.build_parser(); "
            "heavy = {'torch', 'transformers', 'papermill', 'matplotlib'}; "
            "sys.exit(1 if heavy & {m.split('.')[0] for m in sys.modules} else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# K2's kind: every subcommand's argparse error (type, choice, unknown flag) is one line
# naming the flag, exit 2, no usage dump: the parser class, walked over every subparser.


def _subparsers(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subparsers(sub, (*path, name))


def test_every_subparser_is_the_one_line_parser():
    subs = list(_subparsers(build_parser()))
    assert subs and all(isinstance(p, Parser) for _, p in subs), \
        [n for n, p in subs if not isinstance(p, Parser)]


@pytest.mark.parametrize("argv", [("plan", "--gamma", "2.5"), ("replay", "--method", "medusa"),
                                  ("config", "check", "--no-such-flag"), ("--no-such-flag",)])
def test_usage_errors_are_one_line_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "usage:" not in err
    assert argv[-2 if len(argv) > 1 and argv[-1][0] != "-" else -1] in err


# K3's kind: a bad flag value is refused in the command line's words (the flag, through the
# one table specnb.cli.FLAGS and the ``param`` that specnb._check's errors carry), by the
# library's own check, before the serving model, the simulator or pandas are imported.
_PLAN = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
         "--context", "1000", "--batch", "1", "8", "--gamma", "1", "2", "3"]
_SIM = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
        "--gamma", "3", "--input-len", "100", "--output-len", "10", "--num-prompts", "4",
        "--concurrency", "2"]


def _ngram(argv):
    """``argv`` with --draft ngram for eagle3 (a second --draft is refused: T5-C1)."""
    return [("ngram" if a == "eagle3" else a) for a in argv]


FAST_REFUSALS = [
    (_PLAN + ["--alpha", "1.5"], r"--alpha must be in \[0, 1\]"),
    (_PLAN + ["--tau", "4.5"], r"--tau must be in \[1, gamma \+ 1\] = \[1, 2\] for gamma = 1"),
    (_PLAN + ["--acceptance-rates", "0.8", "1.2", "0.5"], r"--acceptance-rates must be in \[0, 1\]"),
    (_PLAN + ["--alpha", "0.7", "--routing-skew", "0.99"], r"--routing-skew must be in \[0, 0.95\]"),
    (_ngram(_PLAN) + ["--alpha", "0.7", "--proposal-rate", "2"],
     r"--proposal-rate must be in \(0, 1\]"),
    (_PLAN + ["--alpha", "0.7", "--gpu-memory-utilization", "1.5"],
     r"--gpu-memory-utilization must be in \(0, 1\]"),
    (_SIM + ["--alpha", "2"], r"--alpha must be in \[0, 1\]"),
    (_SIM + ["--tau", "9"], r"--tau must be in \[1, gamma \+ 1\] = \[1, 4\]"),
    (_SIM + ["--tau", "2.5", "--request-rate", "nan"], r"--request-rate must be > 0 requests/s, or inf"),
    (_ngram(_SIM) + ["--tau", "2.5", "--proposal-rate", "0"],
     r"--proposal-rate must be in \(0, 1\]"),
]
_FAST_SCRIPT = """
import contextlib, io, json, re, sys
from specnb.cli import main
slow = ("specnb.serving", "specnb.simulate", "pandas", "papermill")
out = []
for argv, pattern in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    out.append([code, err.getvalue(), [m for m in slow if m in sys.modules]])
print(json.dumps(out))
"""


def test_bad_values_name_the_flag_before_the_slow_imports():
    """One process: each refusal exits 2 with one line naming the flag, and after each the
    serving model, the simulator and pandas are still not imported (no timing)."""
    import json
    import re

    got = subprocess.run([sys.executable, "-c", _FAST_SCRIPT, json.dumps(FAST_REFUSALS)],
                         capture_output=True, text=True, check=True)
    for (argv, pattern), (code, err, imported) in zip(FAST_REFUSALS, json.loads(got.stdout)):
        assert code == 2 and re.search(pattern, err), (argv, err)
        assert len(err.strip().splitlines()) == 1 and imported == [], (argv, imported)


@pytest.mark.parametrize("argv, words", [
    (_PLAN[:-4] + ["--gamma", "3", "--tau", "2.5", "--engine", "vllm", "--topk", "2"],
     "--topk 2 drafts a tree"),
    (_PLAN[:-4] + ["--gamma", "3", "--tau", "2.5", "--engine", "sglang", "--num-draft-tokens",
                   "1"], "--num-draft-tokens must be >= 2"),
    (_PLAN + ["--alpha", "0.7", "--proposal-rate", "0.5"], "--proposal-rate 0.5 applies to"),
    (_SIM + ["--tau", "2.5", "--range-ratio", "1.5"], "--range-ratio must be in [0, 1)"),
])
def test_library_errors_after_the_model_is_built_name_the_flag(capsys, argv, words):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_message_maps_a_checked_parameter_to_its_flag_and_leaves_others():
    from specnb import _check
    from specnb.cli import FLAGS, message

    with pytest.raises(ValueError) as info:
        _check.scalar_real("routing_skew", 2.0, lo=0.0, hi=0.95)
    assert info.value.param == "routing_skew" and FLAGS["routing_skew"] == "--routing-skew"
    assert message(info.value).startswith("--routing-skew must be in [0, 0.95]")
    assert message(ValueError("routing_skew is a word here")) == "routing_skew is a word here"
    assert message(ValueError("at routing_skew 2"), ["routing_skew"]) == "at --routing-skew 2"
    import pickle  # worker processes send these back

    again = pickle.loads(pickle.dumps(info.value))
    assert again.param == "routing_skew" and str(again) == str(info.value)


# C5's kind: one exit-status rule (specnb.cli.EXIT_STATUS). A file that cannot be read, or that
# holds no usable data, is bad input: exit 2 with one line naming the file, in every command.
def _bad_file(tmp_path, kind):
    path = tmp_path / f"{kind}.json"
    if kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00\x81 not text")
    elif kind == "nan":  # a bench result whose TPOT is not a number
        from pathlib import Path

        good = Path(__file__).resolve().parents[2] / "data" / "samples" / "bench_on.json"
        path.write_text(good.read_text().replace('"mean_tpot_ms": ', '"mean_tpot_ms": NaN, "x": '))
    return str(path)


_SIM_LOG = [a for a in _SIM if a not in ("--input-len", "100", "--output-len", "10",
                                         "--num-prompts", "4")] + ["--tau", "2.5"]
_BAD_FILE_COMMANDS = {
    "metrics": lambda f, d: ["metrics", f],
    "bench": lambda f, d: ["bench", f, "data/samples/bench_off.json"],
    "plan --calibrate-bench": lambda f, d: _PLAN[:-4] + ["--gamma", "2", "--calibrate-bench", f],
    "plan --calibrate": lambda f, d: _PLAN + ["--alpha", "0.7", "--calibrate", f],
    "plan --acceptance-profile": lambda f, d: _PLAN + ["--acceptance-profile", f],
    "simulate --requests": lambda f, d: _SIM_LOG + ["--requests", f],
    "replay": lambda f, d: ["replay", f, "--gamma", "1"],
    "run --parameters": lambda f, d: ["run", "--parameters", f, "--only", "01",
                                      "--output", str(d / "out")],
}
_CASES = [(c, k) for c in _BAD_FILE_COMMANDS for k in ("missing", "empty", "binary")
          if (c, k) != ("run --parameters", "empty")]  # an empty parameters file: none given
_CASES += [("bench", "nan"), ("plan --calibrate-bench", "nan")]


@pytest.mark.parametrize("command, kind", _CASES)
def test_a_bad_file_is_exit_2_naming_it_in_every_command(capsys, tmp_path, command, kind):
    f = _bad_file(tmp_path, kind)
    code = main(_BAD_FILE_COMMANDS[command](f, tmp_path))
    out, err = capsys.readouterr()
    assert code == 2 and f"{kind}.json" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_exit_status_rule_is_in_the_help():
    from specnb.cli import EXIT_STATUS

    assert "2 bad input" in EXIT_STATUS and "1 the answer is no" in EXIT_STATUS
    assert " ".join(EXIT_STATUS.split()) in " ".join(build_parser().format_help().split())


def test_every_name_a_command_replaces_has_a_flag():
    from specnb.cli import FLAGS, plan, replay, simulate

    for module in (plan, replay, simulate):
        assert set(module._NAMES) <= set(FLAGS), module.__name__


def test_a_value_listed_twice_is_one_rule_in_every_command(capsys):
    """T4-C5: plan, simulate, replay and measure refuse `--gamma 3 3` with the one message of
    :func:`specnb.cli.listed_twice`."""
    from specnb.cli import listed_twice

    want = listed_twice(("--gamma", [3, 3]))
    base = ["--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3"]
    for argv in (["plan", *base, "--context", "4000", "--batch", "1", "--alpha", "0.7"],
                 ["simulate", *base, "--tau", "2.6", "--input-len", "100", "--output-len", "8",
                  "--concurrency", "2"],
                 ["replay"], ["measure"]):
        code = main([*argv, "--gamma", "3", "3"])
        err = capsys.readouterr().err
        assert code == 2 and err.strip().endswith(want), (argv[0], err)


def test_the_version_has_one_home_and_matches_the_changelog(capsys):
    """T4-K4: `specnb --version` is specnb.__version__, which pyproject.toml reads (no second
    copy); an "(unreleased)" top changelog heading means a .dev release of that version."""
    import re
    import tomllib
    from pathlib import Path

    import specnb

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "specnb.__version__"}
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"specnb {specnb.__version__}"
    top = re.search(r"^## (\d+(?:\.\d+)*) ?(\(unreleased\))?", (root / "docs" / "changelog.md")
                    .read_text(), re.M)
    want = top.group(1) + (".dev" if top.group(2) else "")
    assert specnb.__version__.startswith(want), (specnb.__version__, top.group(0))


# T5-C1's kind: an option given twice is refused by the one parser class (exit 2 naming it),
# for every option of every subcommand; options meant to repeat (action="append") are not.

_CANDIDATES = ("1", "0.5", "2", "x", "a=1", "H100-SXM", "0.33.0", "-")


def _one_value(action):
    """A value the option's own type and choices accept (the refusal must come from the
    repetition, not from a bad value)."""
    if action.choices:
        return str(next(iter(action.choices)))
    for text in _CANDIDATES:
        try:
            (action.type or str)(text)
        except (argparse.ArgumentTypeError, TypeError, ValueError):
            continue
        return text
    raise AssertionError(f"no sample value for {action.option_strings}")


def _options():
    for path, sub in _subparsers(build_parser()):
        if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
            continue  # `config`: its options are under check / build
        for action in sub._actions:
            if action.option_strings and not isinstance(
                    action, (argparse._HelpAction, argparse._VersionAction)):
                given = [action.option_strings[-1]]
                if action.nargs != 0:
                    given.append(_one_value(action))
                yield pytest.param(path, action, given, id=" ".join((*path, given[0])))


_ALL_OPTIONS = list(_options())


def test_the_option_walk_covers_every_command():
    commands = {p.values[0] for p in _ALL_OPTIONS}
    assert {("run",), ("measure",), ("config", "check"), ("config", "build"), ("metrics",),
            ("bench",), ("plan",), ("replay",), ("simulate",)} <= commands
    assert len(_ALL_OPTIONS) > 100


@pytest.mark.parametrize("path, action, given", _ALL_OPTIONS)
def test_an_option_given_twice_is_refused_naming_it(capsys, path, action, given):
    parser = build_parser()
    if isinstance(action, (argparse._AppendAction, argparse._CountAction)):
        ns = parser.parse_args([*path, *given, *given] + (["eagle3"] if path == ("config", "build")
                                                         else []))
        assert len(getattr(ns, action.dest)) == 2  # meant to repeat: both kept
        return
    with pytest.raises(SystemExit) as exc:
        parser.parse_args([*path, *given, *given])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"argument {'/'.join(action.option_strings)}: given twice" in err, err
    assert len(err.strip().splitlines()) == 1


def test_given_once_is_not_refused_and_an_alias_counts_as_the_same_option(capsys):
    argv = ["plan", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--draft", "eagle3",
            "--context", "4000", "--batch", "1", "--gamma", "3", "4", "--alpha", "0.7"]
    args = build_parser().parse_args(argv)
    assert args.gamma == [3, 4] and args.alpha == 0.7
    assert not any(k.startswith("_specnb") for k in vars(args))  # no parse state left behind
    for extra in (["--gamma", "5"], ["--alpha", "0.8"]):
        with pytest.raises(SystemExit) as exc:
            main([*argv, *extra])
        assert exc.value.code == 2
        assert f"argument {extra[0]}: given twice" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["config", "build", "ngram", "-k", "3", "--num-speculative-tokens", "4"])
    assert exc.value.code == 2
    assert ("argument -k/--num-speculative-tokens: given twice (first as -k)"
            in capsys.readouterr().err)
