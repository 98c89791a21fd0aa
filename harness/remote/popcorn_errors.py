"""popcorn-cli's and the server's failures, each turned into one clear line (a RemoteError)."""
import re


class RemoteError(Exception):
    """A failure with a one-line message for the user; `kind` names it, `exit_code` is the CLI's."""

    def __init__(self, message: str, kind: str = "error", exit_code: int = 1):
        super().__init__(message)
        self.kind = kind
        self.exit_code = exit_code


RATE_LIMIT_MESSAGE = re.compile(r"Rate limit exceeded: (?P<count>\d+)/(?P<max>\d+) (?P<category>\w+) submissions per hour\. "
                      r"Try again in (?P<seconds>\d+)s")
_SERVER_STATUS_RE = re.compile(r"Server returned status (?P<code>\d+)[^:]*: (?P<detail>.*)")
_NETWORK_HINTS = ("error sending request", "connection refused", "dns error", "error trying to connect",
                  "tcp connect", "connection reset", "network is unreachable", "failed to lookup address",
                  "operation timed out", "certificate")


def classify_failure(stderr: str, returncode: int) -> RemoteError:
    """popcorn-cli exited non-zero: turn its `Application error: ...` into one clear line."""
    app = re.findall(r"Application error: (.*)", stderr)
    detail = app[-1].strip() if app else next((line.strip() for line in reversed(stderr.splitlines())
                                               if line.strip()), f"popcorn-cli exited with code {returncode}")
    whole = stderr if app else detail
    lowered = whole.lower()
    if match := RATE_LIMIT_MESSAGE.search(whole):
        minutes = int(match["seconds"]) / 60
        return RemoteError(f"the server's rate limit: {match['count']}/{match['max']} {match['category']} "
                           f"submissions per hour; try again in {minutes:.0f} min ({match['seconds']} s)",
                           "rate_limit")
    if "deadline to submit" in lowered and "has passed" in lowered:
        match = re.search(r"It was (.+?) and today is", whole)
        when = f" ({match[1].strip()})" if match else ""
        return RemoteError(f"the server refused: the leaderboard's deadline{when} has passed", "deadline")
    if "work on another" in lowered:
        return RemoteError("the server rejected the file: the word it forbids (s-t-r-e-a-m, any case, comments "
                           "included) appears in it", "rejected")
    if "too large" in lowered:
        return RemoteError("the server rejected the file: larger than its 1 MB limit", "rejected")
    if "doesn't match the one in the submission script header" in lowered:
        mismatch = whole[whole.find("Leaderboard name"):].splitlines()[0] if "Leaderboard name" in whole else detail
        return RemoteError(f"the server rejected the file: {mismatch}", "rejected")
    if "kernelguard pre-check is unavailable" in lowered:
        return RemoteError("the server's KernelGuard pre-check is unavailable right now; try again later", "server")
    if "kernelguard" in lowered or re.search(r"Submission \d+ hacked", whole):
        rules = re.search(r"Matched rules: ([^.]+)", whole)
        return RemoteError("the server rejected the file: KernelGuard flagged it"
                           + (f" ({rules[1].strip()})" if rules else f" ({detail})"), "kernelguard")
    if match := re.search(r"Submission (\d+) timed_out: (.*)", whole):
        return RemoteError(f"submission {match[1]} timed out on the server: {match[2].strip()}", "timeout")
    if match := re.search(r"Submission (\d+) failed: (.*)", whole):
        return RemoteError(f"submission {match[1]} failed on the server: {match[2].strip()}", "server")
    if "timed out waiting for submission" in lowered:
        return RemoteError(f"popcorn-cli gave up waiting: {detail}", "timeout")
    if "config file not found" in lowered or "cli_id not found" in lowered or "register" in lowered:
        return RemoteError("popcorn-cli is not registered: run `popcorn-cli register discord` (or github) first",
                           "not_registered", 2)
    if "popcorn_api_url" in lowered:
        return RemoteError("popcorn-cli has no server address: set POPCORN_API_URL (see popcorn-cli's README)",
                           "config", 2)
    if any(hint in lowered for hint in _NETWORK_HINTS):
        return RemoteError(f"network error reaching the server: {detail}", "network")
    if match := _SERVER_STATUS_RE.search(whole):
        return RemoteError(f"server error {match['code']}: {match['detail'].strip()}", "server")
    if "server processing error" in lowered:
        return RemoteError(f"server error: {detail}", "server")
    return RemoteError(f"popcorn-cli failed: {detail}", "popcorn")
