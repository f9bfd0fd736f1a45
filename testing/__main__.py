"""`python -m sixnines.testing --driver NAME [--broker HOST:PORT] [--option KEY=VALUE]
[pytest arguments]`: the conformance suite against one installed driver."""

from __future__ import annotations

import argparse
import sys

import pytest

from sixnines.testing import suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.testing", description=__doc__)
    parser.add_argument("--driver", required=True, help="the driver's entry-point name")
    parser.add_argument("--broker", help="HOST:PORT (default: the driver's builtin broker)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a driver option, the value read as YAML (repeatable)")
    args, rest = parser.parse_known_args(argv)
    forwarded = [suite.__file__, "-p", "no:cacheprovider", "--sixnines-driver", args.driver]
    if args.broker:
        forwarded += ["--sixnines-broker", args.broker]
    for option in args.option:
        forwarded += ["--sixnines-option", option]
    return int(pytest.main([*forwarded, *rest]))


if __name__ == "__main__":
    sys.exit(main())
