"""Stop signals that are never lost.

A stop signal (Ctrl-C, SIGTERM) becomes a `KeyboardInterrupt` raised by its handler in the main
thread, between two bytecodes. When that moment falls inside a finalizer or a weakref callback
(logging's lock, a garbage-collected object), Python cannot raise it there: it prints "Exception
ignored in ..." and goes on, and a process waiting for a thread or a child then waits forever
(seen under load: `analyzer run` paused in its counting, a service's run starting).

`keep_interrupts` installs a hook on what Python cannot raise (`sys.unraisablehook`): a lost
interrupt is sent again, the same signal to the main thread, from a thread of its own once the
finalizer is over (sent from the hook, it would land in the hook, and be lost again; a signal,
unlike `_thread.interrupt_main`, also wakes a main thread blocked in a wait).

`interrupt_handler` makes SIGTERM such an interrupt; the command (`analyzer.__main__`) installs
it before it imports anything heavy, so that a stop in its first seconds is said as any other.

>>> signal_of(KeyboardInterrupt("SIGTERM")), signal_of(KeyboardInterrupt())
(<Signals.SIGTERM: 15>, <Signals.SIGINT: 2>)
"""

from __future__ import annotations

import os
import signal
import sys
import threading

EXIT_INTERRUPTED = 130
"""A command stopped by Ctrl-C or SIGTERM."""

RESEND_AFTER = 0.01
"""Seconds before a lost interrupt is sent again: the finalizer it landed in is over by then
(if another finalizer catches it, it is lost and sent again, until it lands)."""


def signal_of(interrupt: BaseException) -> signal.Signals:
    """The signal an interrupt came from: its first argument when that names one (the handlers
    here raise `KeyboardInterrupt("SIGTERM")`), else Ctrl-C's."""
    name = str(interrupt.args[0]) if interrupt.args else ""
    return signal.Signals[name] if name in signal.Signals.__members__ else signal.SIGINT


class Interrupted(KeyboardInterrupt):
    """A stop signal other than Ctrl-C, handled like it (the run is marked, workers stop)."""


def interrupt_handler():
    """SIGTERM as an interrupt of this process; a worker forked before it resets its own
    handlers (a stop can land in that instant) just ends, quietly, as SIG_DFL would."""
    owner = os.getpid()

    def handler(signum, frame) -> None:
        if os.getpid() != owner:
            os._exit(128 + signum)
        raise Interrupted(signal.Signals(signum).name)
    return handler


def interrupted(interrupt: BaseException) -> str:
    """What a command stopped by `interrupt` says.

    >>> interrupted(Interrupted("SIGTERM"))
    'Interrupted (SIGTERM): nothing was stored, and no file was replaced.'
    """
    why = f" ({interrupt.args[0]})" if interrupt.args else ""
    return f"Interrupted{why}: nothing was stored, and no file was replaced."


def keep_interrupts() -> None:
    """Deliver again any interrupt Python had to drop (once installed, for the process)."""
    previous = sys.unraisablehook
    if getattr(previous, "keeps_interrupts", False):
        return

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            main = threading.main_thread().ident
            assert main is not None
            threading.Timer(RESEND_AFTER, signal.pthread_kill,
                            (main, signal_of(unraisable.exc_value))).start()
            return
        previous(unraisable)

    hook.keeps_interrupts = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook
