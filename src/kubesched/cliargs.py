"""Checked argument types for the command line: counts, ports, seconds, output files.

argparse calls these on a flag's text, so a value out of range is refused as argparse
refuses a non-number (`kubesched bench: error: argument --nodes: ...`, exit status 2)
before any file is read or any work is done, instead of failing later with a traceback
(`--nodes 0`: ZeroDivisionError; `--port 99999`: OverflowError from bind()).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import Any

from kubesched.errors import InputError

MAX_PORT = 65535


def int_at_least(low: int) -> Callable[[str], int]:
    """An integer >= `low` (no upper bound: a large count is slow, not wrong)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def port(text: str) -> int:
    """A TCP port: 0..65535, 0 meaning any free port (the kernel picks one)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to {MAX_PORT} (0: any free port), got {text!r}")
    return value


def seconds(*, positive: bool = False) -> Callable[[str], float]:
    """A finite number of seconds, >= 0 (or > 0 with `positive`): inf and nan are refused, not run with."""
    bound = "> 0" if positive else ">= 0"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(f"must be a finite number of seconds {bound}, got {text!r}")
        return value

    parse.__name__ = f"seconds {bound}"
    return parse


def check_output(path: str) -> None:
    """Refuse an output file that cannot be written, before the work whose result it is to hold."""
    if path == "-":
        return
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError(path, "cannot write: is a directory")
    if not os.path.isdir(parent):
        raise InputError(path, "cannot write: no such directory")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise InputError(path, "cannot write: permission denied")


def validation_level(text: str) -> Any:
    """kubectl's --validate values (strict or true, warn, ignore or false), in its words when bad."""
    from kubesched.api.intake import FieldValidation  # the intake pipeline is heavy: only when used

    try:
        return FieldValidation.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_verbosity_argument(p: argparse.ArgumentParser, help_text: str) -> None:
    """klog's -v/--v N (default 0), for the commands that log as kube-scheduler does."""
    p.add_argument("-v", "--v", type=int_at_least(0), default=0, dest="verbosity", metavar="N", help=help_text)


def add_validate_argument(p: argparse.ArgumentParser) -> None:
    """kubectl's --validate flag, for the commands that read manifests."""
    p.add_argument(
        "--validate",
        type=validation_level,
        default="strict",
        metavar="strict|warn|ignore",
        help="unknown or duplicate fields in manifests: refuse them (strict, default), warn about them, or drop "
        "them silently (ignore), as kubectl's --validate; invalid values are always refused, as the API server does",
    )


def add_progress_arguments(p: argparse.ArgumentParser) -> None:
    """--progress and --quiet: a progress display on stderr, by default only when stderr is a terminal."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress display")
