"""``vllm bench serve ARGS``, without the ``vllm`` command's dispatcher.

The ``serve`` subcommand of ``vllm bench`` is ``BenchmarkServingSubcommand``: its
``add_cli_args`` is ``vllm.benchmarks.serve.add_cli_args`` and its ``cmd`` is
``vllm.benchmarks.serve.main``; this calls the same two on ``sys.argv[1:]``. (The
dispatcher, ``vllm.entrypoints.cli.main``, imports the whole server stack first.)
"""
import sys

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser

if __name__ == "__main__":
    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    main(parser.parse_args(sys.argv[1:]))
