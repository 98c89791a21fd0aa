"""Ctrl-C, remembered. Python drops a KeyboardInterrupt raised while a finalizer (`__del__`) runs: it prints
"Exception ignored" and goes on, so a run waiting on a hanging submission would wait out its whole time limit.
Under `remembered()` the SIGINT handler also notes the press, and the waits call `raise_if_pressed()` between
short sleeps, so the interrupt comes back within one sleep."""
import contextlib
import signal
import threading

_pressed = False


def _on_sigint(signum, frame):
    """Python's own handler (raise KeyboardInterrupt), after noting the press."""
    global _pressed
    _pressed = True
    raise KeyboardInterrupt


def raise_if_pressed() -> None:
    """KeyboardInterrupt if Ctrl-C was pressed under `remembered()`, even if the first one was dropped."""
    if _pressed:
        raise KeyboardInterrupt


@contextlib.contextmanager
def remembered():
    """The block's Ctrl-C is noted as well as raised (in the main thread, where Python's own handler is set;
    an inherited 'ignore', as in a background job, is kept)."""
    global _pressed
    _pressed = False
    ours = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    previous = signal.signal(signal.SIGINT, _on_sigint) if ours else None
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)
        _pressed = False
