"""The `agentledger` console script.

`agentledger exec` (the gated shell, run for every command an agent runs) and `agentledger
guard` (the production guard, run before every tool call) are parsed by hand and import only
what they need, as is `agentledger label` given its flags (a person labelling run after run);
`agentledger --help` is written from the table of commands without click
(cli/quick_help.py); every other command goes to the click application.
"""

from __future__ import annotations

import sys

__all__ = ["console", "main"]


def main() -> None:
    """Run `agentledger` with the arguments in sys.argv."""
    if sys.argv[1:] in (["--help"], ["-h"]):
        from agentledger.cli.quick_help import print_help

        sys.exit(print_help())
    if len(sys.argv) > 1 and sys.argv[1] == "exec":
        from agentledger.cli.exec_fast import fast_main

        code = fast_main(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    if len(sys.argv) > 1 and sys.argv[1] == "guard":
        from agentledger.cli.guard_fast import fast_main as guard_main

        code = guard_main(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    if len(sys.argv) > 1 and sys.argv[1] == "label":
        from agentledger.cli.label_fast import fast_main as label_main

        code = label_main(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    from agentledger.cli.app import main as cli_main

    cli_main()


def console() -> None:
    """The console script: `main`, except that an `import` ends without the interpreter's
    teardown (a caller of `main` in its own process keeps its process)."""
    if len(sys.argv) > 1 and sys.argv[1] == "import":
        try:
            main()
        except SystemExit as done:
            _exit_now(done)
        _exit_now(SystemExit(0))
    main()


def _exit_now(done: SystemExit) -> None:
    """End an `import` without the interpreter's teardown: once its output is written and the
    exit handlers have run, freeing what it built object by object (an import's plans, the
    modules) is work for nothing, 0.1 to 0.5 s of CPU after an import of 300 trajectories.
    The usual exit when the code is not a number, when a thread still runs, or when the
    output cannot be written (the interpreter then says why)."""
    import os
    import threading

    code = done.code
    if code is not None and not isinstance(code, int):
        raise done
    if threading.active_count() > 1:
        raise done
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        raise done from None
    import atexit

    atexit._run_exitfuncs()
    os._exit(code or 0)
