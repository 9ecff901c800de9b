#!/usr/bin/env bash
# The fuzz regression corpus (tests/fuzz/corpus/: seeds and every crasher
# kept) replayed through the plain drivers replay_mm_header, replay_mm_read,
# replay_mesh, replay_params and replay_multipart, which every compiler
# builds; then, where the build also
# has the libFuzzer binaries (clang, -DCLSOLVE_FUZZ=ON), each target fuzzed
# for CLSOLVE_FUZZ_SECONDS (default 60; 0 skips). Builds nothing: the
# binaries are looked up in FUZZ_BIN_DIR, default BUILD/tests/fuzz (BUILD
# being where ctest's clsolve lives). Skips (77) when the build has no
# tests/fuzz targets. See tests/fuzz/run-regression.sh and
# docs/reliability.md.
. "$(dirname "$0")/lib.sh"
fuzzdir=$here/../fuzz
bindir=${FUZZ_BIN_DIR:-}
if [ -z "$bindir" ] && [ -n "${CLSOLVE:-}" ]; then
    bindir=$(dirname "$CLSOLVE")/tests/fuzz
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/replay_mm_read" ]; then
    echo "SKIP: no replay drivers in '${bindir:-?}' (is tests/fuzz in the build?)" >&2
    exit 77
fi
secs=${CLSOLVE_FUZZ_SECONDS:-60}
rm -rf "$TEST_TMP/fuzz"
if bash "$fuzzdir/run-regression.sh" --fuzz "$secs" --work "$TEST_TMP/fuzz" "$bindir"; then ok; else
    bad "fuzz regression (logs under $TEST_TMP/fuzz)"
fi
finish
