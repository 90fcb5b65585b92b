"""What the fork server that starts the service's runs loads first (`runner.run_processes`):
the run's modules, and SIGINT ignored in it before it saves its handlers, so that every
process it forks starts with SIGINT ignored, as a run's process must until it has set up its
own handling (`runner._child`): a Ctrl-C at the server's terminal, which reaches every process
of its group, would otherwise raise KeyboardInterrupt in a run's process as it starts, and
print a traceback. Imported anywhere else (`FORK_SERVER` unset), it changes nothing."""

from __future__ import annotations

import os
import signal

from .runner import FORK_SERVER  # the runner loaded once here, for every run's process

if os.environ.pop(FORK_SERVER, None):  # not passed on to the processes it forks
    signal.signal(signal.SIGINT, signal.SIG_IGN)
