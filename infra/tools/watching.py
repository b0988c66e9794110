"""`--watch` of `status` and `lag`: a screen read and shown again every few seconds until Ctrl-C."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any, Callable, NoReturn

WATCH_SECONDS = (2, 3600)  # --watch's bounds: no tighter than the API server should be read, at most an hour


def repeat(watch: int, once: Callable[[], object]) -> NoReturn:
    """`once()` every `watch` seconds until interrupted (KeyboardInterrupt: the command line's
    exit 130); each round bounded by its own deadlines."""
    with _interruptible() as interrupted:
        while True:
            once()
            until = time.monotonic() + watch
            while not interrupted:
                left = until - time.monotonic()
                if left <= 0:
                    break
                time.sleep(min(left, 0.2))
            if interrupted:
                raise KeyboardInterrupt  # the command line's exit 130


class _interruptible:
    """SIGINT remembered as well as raised while the watch runs. Python raises KeyboardInterrupt
    wherever the main thread is when the signal arrives; inside a finalizer run by the garbage
    collector (urllib3 closing a pool's sockets, say) it is printed as "Exception ignored" and
    lost, and the watch went on (a run of the API-server tier saw it). Remembered, it ends the
    watch at the next check, within 0.2 s between rounds and at the end of a round (each round
    bounded by its own deadline). The "Exception ignored" report of an interrupt it remembered is
    not printed either: Ctrl-C ends the watch with exit 130 and no traceback (a run of the engine
    tier saw one on standard error)."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.previous: Any = None
        self.unraisable: Any = None

    def __enter__(self) -> list[int]:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            if self.previous is signal.default_int_handler:  # not where SIGINT is ignored or handled
                signal.signal(signal.SIGINT, self._handle)
                self.unraisable = sys.unraisablehook
                sys.unraisablehook = self._ignored
            else:
                self.previous = None
        return self.signals

    def _handle(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)
        raise KeyboardInterrupt

    def _ignored(self, report: Any) -> None:
        # Only the interrupt this handler raised and remembered; anything else as Python reports it.
        if not (self.signals and report.exc_type is KeyboardInterrupt):
            self.unraisable(report)

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            sys.unraisablehook = self.unraisable
