"""The `analyzer` command: its console script (`main`) and `python -m analyzer`, one entry.

It imports nothing heavy before it has made SIGTERM an interrupt: the command's modules take
seconds to load, and a stop signal then (Ctrl-C, SIGTERM) is said and ends the command with exit
130, as during the command, where Ctrl-C printed a KeyboardInterrupt traceback and SIGTERM ended
it without a word.
"""

from __future__ import annotations

import signal
import sys

from analyzer.interrupts import EXIT_INTERRUPTED, interrupt_handler, interrupted


def main() -> None:
    previous = signal.signal(signal.SIGTERM, interrupt_handler())
    try:
        from analyzer.cli import main as command

        command()
    except KeyboardInterrupt as error:  # while loading, or around the command's own handling
        sys.stderr.write(interrupted(error) + "\n")
        sys.exit(EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    main()
