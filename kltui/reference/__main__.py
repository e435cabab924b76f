"""`python -m kltui.reference serve [options]`: run the reference server in this process."""

from __future__ import annotations

import argparse
import sys

from kltui.reference.cli_entry import add_arguments, main


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kltui.reference",
        description="kltui's embedded SGLang-compatible reference server",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_arguments(sub.add_parser("serve", help="serve the SGLang native API on a tiny Llama"))
    args = parser.parse_args(argv)
    return main(args)


if __name__ == "__main__":
    sys.exit(run())
