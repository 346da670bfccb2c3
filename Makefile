# One command to run, one to test. Both create .venv on first use and reinstall only when
# requirements/lock.txt or pyproject.toml change.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-stress lint bench lock clean

run: $(STAMP)
	@# Bytecode up to date even where PYTHONDONTWRITEBYTECODE is set: a faster first paint.
	@$(BIN)/python -m compileall -q -j0 assistant indexing tui >/dev/null
	$(BIN)/brain $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The TUI and end-to-end tests with every core kept busy by other processes (tests/stress.py):
# a race that an idle machine hides fails here.
test-stress: $(STAMP)
	$(BIN)/python -m pytest tests/tui tests/e2e --stress $(PYTEST_ARGS)

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
	rm -rf $(VENV)
