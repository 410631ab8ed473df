"""The `gridbots` program (pyproject's console script): `gridbots stage …` goes to the pipeline's
stage commands, through the warm stage host when `gridbots repro` started one, and never loads
the command line; every other command goes to the command line (flows/cli/app.py).

So a DVC stage runs this module, the stage commands and its own stage's modules, and its deps
(flows.pipeline.dependencies) name no command-line file: editing one leaves the pipeline alone.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Runs one command line; its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["stage"]:
        from flows.pipeline.host import ENV, run_through_host

        if ENV in os.environ:  # nothing else imported here: a stage's caller only waits
            code = run_through_host(args)
            if code is not None:
                return code
        from flows.pipeline.commands import run as run_stage

        return run_stage(args[1:])
    from flows.cli.app import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
