"""Submitting to the real leaderboard: the local gate, rate limits, popcorn-cli, its reports and errors."""
