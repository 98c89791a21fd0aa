# amd-mixed-mla toolkit. `make test` and `make run` set everything up on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The CPU build that lies on this workplace's disk; used only when no torch is importable.
CPU_TORCH ?= torch==2.13.0

.PHONY: setup hip-toolchain sandbox-tool test test-gpu run scoreboard diff submit lint clean

setup: $(STAMP) hip-toolchain sandbox-tool

# --system-site-packages keeps a ROCm or CUDA torch the machine already has.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(CPU_TORCH)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

# clang-22 (apt, where root), HIP 6.2 headers and device libraries into ~/.cache/amd-mixed-mla/hip (harness/compile/hip/toolchain.py).
# Idempotent; never fails setup: it prints what it could not install.
hip-toolchain: $(STAMP)
	$(BIN)/python -m harness.compile.hip.toolchain setup

# bubblewrap (apt, where root) for the sandbox runs get (harness/sandbox/); never fails setup: without it, runs
# use the fallback's file checks, and it says so.
sandbox-tool: $(STAMP)
	$(BIN)/python -m harness.sandbox.bwrap setup

test: setup
	$(BIN)/python -m pytest -q -m "not gpu"

test-gpu: setup
	$(BIN)/python -m pytest -q -m gpu

# The scoreboard is regenerated even when a submission failed; the run's exit code is kept.
run: setup
	$(BIN)/harness run --all --mode benchmark; status=$$?; $(BIN)/harness scoreboard && exit $$status

scoreboard: setup
	$(BIN)/harness scoreboard

diff: setup
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make diff A=119 B=200 [SOURCE=1]" >&2; exit 2; }
	$(BIN)/harness diff $(A) $(B) $(if $(SOURCE),--source,)

lint: setup
	$(BIN)/harness lint $(N)

# make submit N=120 [MODE=test|benchmark|leaderboard] [DRY_RUN=1] [FORCE=1] [TIMEOUT=seconds]; see docs/REMOTE.md
MODE ?= leaderboard
submit: setup
	@test -n "$(N)" || { echo "usage: make submit N=120 [MODE=test|benchmark|leaderboard] [DRY_RUN=1] [FORCE=1] [TIMEOUT=seconds]" >&2; exit 2; }
	$(BIN)/harness submit $(N) --mode $(MODE) $(if $(DRY_RUN),--dry-run,) $(if $(FORCE),--force,) $(if $(TIMEOUT),--timeout $(TIMEOUT),)

clean:
	rm -rf $(VENV) build *.egg-info
