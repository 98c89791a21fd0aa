"""The ledger record and its views: records, the ledger file, scoreboard, chart, diff. Never imports run/compile/remote."""
