"""What counts as verified on MI355X: a passing test or leaderboard run there (remote, or a local gfx950), never the
aiter stand-in, the interpreter, the gfx950 emulator, a compile or an estimate. The scoreboard marks everything else "not verified"."""


def needs_mi355x(requirements: frozenset) -> bool:
    return bool({"hip", "aiter"} & set(requirements))


def verified_on_mi355x(record: dict, everything: list[dict]) -> bool:
    """A passing test or leaderboard run on MI355X (remote, or a local gfx950) of the same file or number."""
    sub = record["submission"]
    for other in everything:
        other_sub = other["submission"]
        on_mi355x = ((other["source"] == "remote" or other["device"]["arch"] == "gfx950") and not other.get("standin")
                     and other.get("emulator") is None)  # the gfx950 emulator is the CPU, never MI355X
        if not on_mi355x or other["mode"] not in ("test", "leaderboard") or other["status"] != "pass":
            continue
        same_file = sub["sha256"] and other_sub["sha256"] == sub["sha256"]
        same_number = sub["numbered"] and other_sub["numbered"] and other_sub["number"] == sub["number"]
        if same_file or same_number:
            return True
    return False
