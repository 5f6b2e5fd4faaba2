# The two commands of the README:
#   make run   installs what is missing (as root), builds, runs the tour
#   make test  the same set-up, then the whole test suite through CTest
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# The differential test against libtorch (label difftest, about a minute of
# CPU) is left out of `make test`; `make difftest` runs it.
CTEST_ARGS ?= -LE difftest

.PHONY: all deps configure build run test difftest bench clean

all: build

deps:
	@sh scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/kd run examples/tour.kd

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# Every operator against libtorch 1.13 (built when libtorch-dev is installed):
# docs/DIFFTEST.md.
difftest: build
	cd $(BUILD) && ctest --output-on-failure -L difftest

# Side by side in one run: kdispatch, then libtorch when it was built.
bench: build
	sh bench/side_by_side.sh $(BUILD)/bin

clean:
	rm -rf $(BUILD)
