"""Keeping a submission's worker from changing anything outside its own scratch space.

guard chooses the protection (bubblewrap where it starts, else file checks) and wraps one run; bwrap builds the
sandbox's command line; filecheck snapshots, checks and restores the files the parent trusts; procs finds and ends
the processes a run leaves behind (both sides); inside words what the sandbox refuses the child (child side).
"""
