"""The two ways a stand-in call fails on purpose; the child reports either as the case's one-line message."""


class StandInError(Exception):
    """A failure the stand-in words itself (the child prints str(exc), without a type name)."""


class StandInRefusal(StandInError):
    """A call the runner's aiter would not do, or would do wrongly: the message names the argument and what the
    runner does with it."""


class NotCovered(StandInError):
    """An aiter name the stand-in neither emulates nor models: 'not covered: aiter.X (...)', never a pass."""

    def __init__(self, dotted: str, known_upstream: bool = True):
        where = "" if known_upstream else "; the runner's aiter f3be04a12a has no such name either"
        super().__init__(f"not covered: {dotted} (the aiter stand-in neither emulates nor models it{where})")
        self.name = dotted


def refuse(argument: str, value, runner_does: str) -> StandInRefusal:
    """'page_size=8: on MI355X the asm kernel ...' - the argument, its value and what the runner does with it."""
    return StandInRefusal(f"aiter stand-in refuses {argument}={value}: {runner_does}")


def check(condition: bool, function: str, message: str) -> None:
    """The real aiter's TORCH_CHECK / assert: a RuntimeError with the same gist as the pinned commit's text."""
    if not condition:
        raise RuntimeError(f"{function}: {message}")
