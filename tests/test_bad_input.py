"""Bad input, edge values and broken files: a clear error (parameter, value, what is allowed),
never a silent guess, never a traceback from the CLI, and the documented exit status."""

from __future__ import annotations

import io
import json
import math
import sys
import time

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from specnb import article, batch, cost, memory, methods, runner, theory, verify
from specnb.cli import main
from specnb.vllm import (
    ConfigSyntaxError,
    acceptance_stats,
    check_speculative_config,
    compare_bench,
    log_counts,
    parse_speculative_config,
    python_snippet,
    read_bench,
    read_metrics,
    read_spec_decode_log,
    recommend,
    sample_path,
    serve_command,
    speculative_config,
    yaml_config,
)
from specnb.vllm.metrics import SpecDecodeCounts
from specnb.vllm.theory_free import *  # noqa: F401,F403  (placeholder removed below)
