# Two commands do all the set-up on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_OUT := out/demo

.PHONY: demo test lint bench clean

# (Re)install when pyproject.toml changes. torch/torchvision come from pip's local cache here.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/trainplay profile resnet50 --batch 32 --out $(DEMO_OUT)/resnet50-profile.json
	@echo "demo output: the table above, and $(DEMO_OUT)/resnet50-profile.json (the JSON contract)"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

# pytest exits 5 when it collects no tests; make treats that as a failure, as it should.
test: lint
	$(BIN)/python -m pytest -q

# Benchmarks compare with other FLOP counters: install them on demand (the `bench` extra).
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	$(BIN)/python benchmarks/torchvision_reference.py
	$(BIN)/python benchmarks/profile_speed.py
	$(BIN)/python benchmarks/hw_peaks.py

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
