# amd-mixed-mla toolkit. `make test` and `make run` set everything up on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The CPU build that lies on this workplace's disk; used only when no torch is importable.
CPU_TORCH ?= torch==2.13.0

.PHONY: setup hip-toolchain sandbox-tool amd-aiter aiter-modules test test-fast test-emulator test-gpu run scoreboard diff submit lint clean

setup: $(STAMP) hip-toolchain sandbox-tool amd-aiter aiter-modules

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

# The pinned amd-aiter wheel's gfx950 MLA code objects and C++/HIP sources, unpacked as data into
# ~/.cache/amd-mixed-mla/amd-aiter/ (never installed: it would shadow the stand-in); never fails setup.
amd-aiter: $(STAMP)
	$(BIN)/python -m harness.aiter_gfx950.package setup

# aiter's metadata and reduce modules from that wheel's sources (gfx950 device code for the emulator, host code
# for the CPU): minutes once, cached; a run's call never builds them (it says so and runs the torch model).
aiter-modules: amd-aiter hip-toolchain
	$(BIN)/python -m harness.aiter_gfx950.build

# Two workers (pytest-xdist; the CI machine has 2 cores), the longest work first (tests/suite_time.py), and
# the 25 slowest tests at the end; each test's seconds go to .pytest_cache/durations.json, which an idle
# run's copy refreshes tests/durations.json from.
PYTEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -q -m "not gpu and not emulator_e2e" -n $(PYTEST_WORKERS) --dist loadgroup --durations=25 \
		--record-durations .pytest_cache/durations.json

# The edit loop: the suite less its slow tests (the README commands on a fresh clone among them).
test-fast: setup
	$(BIN)/python -m pytest -q -m "not gpu and not slow and not emulator_e2e" -n $(PYTEST_WORKERS) --dist loadgroup

# Whole HIP files (load_inline builds, the samples) on the gfx950 emulator: minutes each, kept out of make test.
test-emulator: setup
	$(BIN)/python -m pytest -q -m emulator_e2e -n $(PYTEST_WORKERS) --dist loadgroup --durations=10

# Without a GPU: one line ("*** no GPU ...  Stop.") and exit 2, not a page of skips and fails.
HAS_GPU = $(shell $(BIN)/python -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null)
test-gpu: $(STAMP)
	$(if $(filter 1,$(HAS_GPU)),,$(error no GPU on this machine (torch sees no CUDA or ROCm device): make test-gpu has nothing to run))
	@$(MAKE) -s hip-toolchain sandbox-tool
	$(BIN)/python -m pytest -q -m gpu

# The scoreboard is regenerated even when a submission failed; the run's exit code is kept.
run: setup
	$(BIN)/harness run --all --mode benchmark; status=$$?; $(BIN)/harness scoreboard && exit $$status

scoreboard: setup
	$(BIN)/harness scoreboard

diff: setup
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make diff A=119 B=200 [SOURCE=1]" >&2; exit 2; }
	$(BIN)/harness diff $(A) $(B) $(if $(SOURCE),--source,)

# make's exit code is 2 whenever a step fails; the last line names the harness's own (harness lint/submit direct
# returns it: docs/RELIABILITY.md).
KEEP_STATUS = || { status=$$?; echo "make $@: harness exited with $$status (make's own exit code is 2)" >&2; exit $$status; }

lint: setup
	@$(BIN)/harness lint $(N) $(KEEP_STATUS)

# make submit N=120 [MODE=test|benchmark|leaderboard] [DRY_RUN=1] [FORCE=1] [TIMEOUT=seconds]; see docs/REMOTE.md
MODE ?= leaderboard
submit: setup
	@test -n "$(N)" || { echo "usage: make submit N=120 [MODE=test|benchmark|leaderboard] [DRY_RUN=1] [FORCE=1] [TIMEOUT=seconds]" >&2; exit 2; }
	@$(BIN)/harness submit $(N) --mode $(MODE) $(if $(DRY_RUN),--dry-run,) $(if $(FORCE),--force,) $(if $(TIMEOUT),--timeout $(TIMEOUT),) $(KEEP_STATUS)

clean:
	rm -rf $(VENV) build *.egg-info
