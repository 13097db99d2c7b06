# pmlab's two entry points: `make run` (set up, build, run the main job) and `make test` (set up, build, test).
PRESET ?= release
BUILD_DIR := build/$(PRESET)
JOBS ?= 2

.PHONY: all deps build run run-full demo test test-sanitize bench format clean docs check-examples

all: build

deps:
	@scripts/setup-deps

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS)

# The main job: the papers' evaluation, quick sizes (a few minutes), report in results/. The
# run is then stored as docs/results/results.json and the results pages' generated tables are
# rewritten from it (tools/results_tables.py), so that the pages show the latest run.
run: build
	@$(BUILD_DIR)/pmlab eval --quick --out results
	@python3 tools/results_tables.py --results results/results.json --docs docs \
		--store docs/results/results.json

# The same at the papers' sizes (hours).
run-full: build
	@$(BUILD_DIR)/pmlab eval --full --out results-full

# An LP tmm killed with SIGKILL mid-run, resumed from its pool, and verified bit for bit.
demo: build
	@scripts/demo-kill-resume $(BUILD_DIR)/pmlab

test: build
	@ctest --preset $(PRESET) -j $(JOBS)

# ASan + UBSan build of the whole suite (also run by .ci/run). It looks for memory errors on
# every test and every kernel x scheme, with a fifth of the property trials and 3 kill -9 trials
# per scheme; the statistical checks (non-vacuity of a campaign) are the release run's.
test-sanitize: deps
	@cmake --preset asan-ubsan >/dev/null
	@cmake --build --preset asan-ubsan -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=0 PMLAB_CRASH_TRIALS=3 PMLAB_TEST_SCALE=0.2 ctest --preset asan-ubsan -j $(JOBS)

# The Doxygen API reference (build/$(PRESET)/docs/html); warnings in the user API fail it.
docs: build
	@cmake --build --preset $(PRESET) --target docs

# Install to a temporary prefix; build and run examples/ against it with find_package(pmlab).
check-examples: build
	@PRESET=$(PRESET) scripts/check-examples

bench: build
	@scripts/backend-overhead $(BUILD_DIR)/bench/bench_backend $(BUILD_DIR)/pmlab

format:
	@find include src tests bench -name '*.hpp' -o -name '*.cpp' | xargs clang-format -i

clean:
	@rm -rf build
