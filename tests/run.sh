#!/usr/bin/env bash
# tests/run.sh: the whole test suite from nothing: installs missing Debian
# packages, configures and builds, runs every ctest test (on PoCL's CPU
# device; MPI tests under mpirun --oversubscribe), then the same suite built
# with ASan + UBSan (the tests that exercise memory), then the libFuzzer
# targets. The README's command 2 and
# what CI runs (.ci/run).
#   BUILD_DIR=build-test  CLSOLVE_DATA_DIR=../shared/data  JOBS=2
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-test}
data=${CLSOLVE_DATA_DIR:-$(cd .. && pwd)/shared/data}
jobs=${JOBS:-$(nproc)}
deploy/install-deps.sh --test
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSOLVE_WERROR=ON \
      -DCLSOLVE_DATA_DIR="$data" >/dev/null
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
# The tests that exercise memory again, built with AddressSanitizer and
# UBSan (-DCLSOLVE_SANITIZE=ON; tests/CMakeLists.txt sets the sanitizer
# options and the leak suppressions of third-party libraries, and names the
# tests left out of this stage with their reasons: docs/reliability.md, "The
# sanitized stage"). CLSOLVE_SANITIZE_STAGE=0 skips it.
if [ $# -eq 0 ] && [ "${CLSOLVE_SANITIZE_STAGE:-1}" != 0 ]; then
    cmake -S . -B "$build-san" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSOLVE_WERROR=ON \
          -DCLSOLVE_SANITIZE=ON -DCLSOLVE_DATA_DIR="$data" >/dev/null
    cmake --build "$build-san" -j "$jobs"
    # A test whose only failure is LeakSanitizer's tracer crashing at its
    # exit runs once more (tests/sanitizers/tracer_retry.sh says why);
    # any other failure fails the stage.
    ctest --test-dir "$build-san" --output-on-failure -j "$jobs" ||
        tests/sanitizers/tracer_retry.sh "$build-san" "$jobs"
fi
# The readers' libFuzzer targets (clang, ASan + UBSan): the regression corpus
# and about a minute of fuzzing each (CLSOLVE_FUZZ_SECONDS; one target per
# core at a time), as
# docs/reliability.md describes. Skipped where there is no clang.
if [ $# -eq 0 ] && command -v clang >/dev/null 2>&1 && [ "${CLSOLVE_FUZZ_SECONDS:-60}" != 0 ]; then
    cmake -S tests/fuzz -B "$build-fuzz" -DCMAKE_C_COMPILER=clang -DCLSOLVE_FUZZ=ON >/dev/null
    cmake --build "$build-fuzz" -j "$jobs" >/dev/null
    ctest --test-dir "$build-fuzz" --output-on-failure
fi
