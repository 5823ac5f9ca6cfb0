"""`python -m kubesched.serve` (the same as `kubesched serve`)."""

from __future__ import annotations

import argparse
import sys

from kubesched.errors import InputError
from kubesched.serve.command import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kubesched serve", description="The embedded cluster behind the Kubernetes API.")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
