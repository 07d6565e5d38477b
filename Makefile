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

# A named cluster shipped with trainplay (`trainplay hw list` shows the presets).
EXAMPLE_CLUSTER := lab

# The main job: MD-Roofline of resnet50 trained data-parallel on the example mixed lab.
demo: $(STAMP)
	$(BIN)/trainplay analyze resnet50 --cluster $(EXAMPLE_CLUSTER) --parallel dp=8 --batch 32
	$(BIN)/trainplay analyze resnet50 --cluster $(EXAMPLE_CLUSTER) --parallel dp=8 --batch 32 \
		--format html --out $(DEMO_OUT)/resnet50-report.html --plots $(DEMO_OUT)/plots
	@echo "demo output: the table above; $(DEMO_OUT)/resnet50-report.html (open it in a browser) and the planes in $(DEMO_OUT)/plots/"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

# pytest exits 5 when it collects no tests; make treats that as a failure, as it should.
# The slowest tests are listed at the end: the suite is kept under 15 minutes, CI's run included.
test: lint
	$(BIN)/python -m pytest -q --durations=15

# Benchmarks compare with other FLOP counters: install them on demand (the `bench` extra).
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	$(BIN)/python benchmarks/torchvision_reference.py
	$(BIN)/python benchmarks/profile_speed.py
	$(BIN)/python benchmarks/cli_speed.py
	$(BIN)/python benchmarks/hw_peaks.py
	$(BIN)/python benchmarks/cnn12.py
	$(BIN)/python benchmarks/report_screenshot.py
	$(BIN)/python benchmarks/train_overhead.py
	$(BIN)/python benchmarks/train_recovery.py
	$(BIN)/python benchmarks/train_faults.py
	$(BIN)/python benchmarks/train_plan_choice.py
	$(BIN)/python benchmarks/published_gpu.py
	$(BIN)/python benchmarks/plan_quality.py
	$(BIN)/python benchmarks/plan_speed.py
	$(BIN)/python benchmarks/train_memory_large.py
	$(BIN)/python benchmarks/train_decoder.py
	$(BIN)/python benchmarks/cpu_allocator.py
	@echo "benchmarks/validate_cpu.py (--set development, held-out, held-out-2) takes most of an hour on an idle machine: run it on its own (then benchmarks/cache_knee_whatif.py)"

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
