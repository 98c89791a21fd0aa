"""The rate-limit memory: what was sent to the leaderboard server and when (results/remote/sent.jsonl).

The server allows a few submissions per rolling hour, per leaderboard and mode category (observed: 1
leaderboard and about 6 test submissions). Every send is noted before popcorn-cli starts and its
outcome after it ends, so a later send can be refused here before the server refuses it.
"""
import dataclasses
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harness import paths
from harness.results import ledger
from harness.remote.popcorn_errors import RemoteError

DEFAULT_RATE_LIMITS = {"leaderboard": 1, "test": 6}
RATE_LIMIT_ENV = {"leaderboard": "HARNESS_RATE_LIMIT_LEADERBOARD", "test": "HARNESS_RATE_LIMIT_TEST"}
RATE_WINDOW = timedelta(hours=1)


def rate_limits() -> dict[str, int]:
    """The per-hour limits: defaults, overridden by $HARNESS_RATE_LIMIT_LEADERBOARD / _TEST."""
    limits = dict(DEFAULT_RATE_LIMITS)
    for category, variable in RATE_LIMIT_ENV.items():
        value = os.environ.get(variable)
        if value is None:
            continue
        if not value.strip().isdigit():
            raise RemoteError(f"${variable} must be a whole number of submissions per hour, not {value!r}", "usage", 2)
        limits[category] = int(value)
    return limits


def mode_category(mode: str) -> str:
    """The server's rate-limit category: leaderboard mode apart, everything else counts as "test"."""
    return "leaderboard" if mode == "leaderboard" else "test"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


# Refusals that come before the server creates a submission do not count against its limit.
_NOT_COUNTED = {"rate_limit", "deadline", "rejected", "not_registered", "config", "network"}


def sent_log_path() -> Path:
    return paths.remote_dir() / "sent.jsonl"


def note_sent(entry: dict) -> None:
    """Append one event (a send, or a send's outcome with the same id) to the sent log."""
    ledger.append(entry, sent_log_path())


def sent_history() -> list[dict]:
    """One entry per send: its first line, with the outcome of its last line."""
    by_id: dict[str, dict] = {}
    for event in ledger.read(sent_log_path()):
        if "id" not in event:
            continue
        by_id.setdefault(event["id"], dict(event)).update(
            {key: event[key] for key in ("outcome", "retry_at") if key in event})
    return list(by_id.values())


@dataclasses.dataclass
class RateCheck:
    ok: bool
    message: str


def check_rate_limit(leaderboard: str, mode: str, now: datetime | None = None) -> RateCheck:
    """Would one more submission of this mode exceed what we know of the server's hourly limit?"""
    now = now or utc_now()
    category = mode_category(mode)
    limit = rate_limits()[category]
    recent, retry_at = [], None
    for entry in sent_history():
        if entry.get("leaderboard") != leaderboard or entry.get("category") != category:
            continue
        if entry.get("retry_at"):
            moment = datetime.fromisoformat(entry["retry_at"])
            retry_at = max(retry_at, moment) if retry_at else moment
        sent_at = datetime.fromisoformat(entry["time"])
        if now - sent_at < RATE_WINDOW and entry.get("outcome") not in _NOT_COUNTED:
            recent.append(sent_at)
    if retry_at and retry_at > now:
        wait = (retry_at - now).total_seconds()
        return RateCheck(False, f"the server said to wait: next {category} submission allowed in "
                                f"{wait / 60:.0f} min (at {retry_at:%H:%M} UTC)")
    if len(recent) >= limit:
        wait = (min(recent) + RATE_WINDOW - now).total_seconds()
        return RateCheck(False, f"rate limit: {len(recent)}/{limit} {category} submissions sent to {leaderboard} "
                                f"in the last hour; next one in {wait / 60:.0f} min")
    return RateCheck(True, f"{len(recent)}/{limit} {category} submissions sent to {leaderboard} in the last hour")
