#!/usr/bin/env bash
# bench/springs-projection.sh: the springs projections side by side on the
# Cochino-sized body (issue 26, item 8): Gauss-Seidel (the thesis's
# colour order, the plan AUTO picks) against Jacobi at several sweeps per
# step and relaxations, each row with its time per step (min / median of
# REPS runs) and what the body looks like at the end: RMS and largest
# spring strain, height kept (height_ratio) and shape error. A Jacobi
# sweep is weaker than a Gauss-Seidel one, so its speed means something
# only at the sweeps that keep the body as well as one Gauss-Seidel sweep
# does; the table shows both. It builds nothing.
#
#   CLSOLVE=/path/build/clsolve bash bench/springs-projection.sh
#
# Environment:
#   CLSOLVE   the clsolve binary (required)
#   MESH      the body's mesh (default ../shared/data/meshes/fandisk.obj:
#             6,475 vertices; with --max-dist 0.5869, 450,383 springs, the
#             size of Campa 2010's Cochino)
#   BODY      mesh (default: MESH dropped on a floor, pure springs) or plano
#             (the thesis's 51 x 51 grid hanging from two corners)
#   DEVICE    gpu (default), cpu or an index
#   STEPS     steps per run (default 1000; the body lands at about step 70
#             and settles)
#   REPS      timed runs per row (default 3)
#   CONFIGS   Jacobi rows, space-separated SWEEPS:OMEGA:CHEBYSHEV:DELAY
#             (default: plain Jacobi at 16, 32, 64 sweeps, omega 3.5; and
#             Chebyshev-accelerated at 8 to 24 sweeps, rho 0.9 / 0.95 / 0.98
#             after 1 / 2 / 4 plain sweeps, omega 3 and 3.5)
#   TEAMS     work-items per particle of the Jacobi kernel (default: the
#             plan's own choice; a list such as 8,16,32 adds rows for the
#             last config, through the diagnostic CLSOLVE_SPRINGS_TEAM)
set -uo pipefail

CLSOLVE=${CLSOLVE:-}
if [ -z "$CLSOLVE" ] || [ ! -x "$CLSOLVE" ]; then
  echo "set CLSOLVE to the built clsolve binary (this script builds nothing)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
MESH=${MESH:-$here/../shared/data/meshes/fandisk.obj}
DEVICE=${DEVICE:-gpu}
STEPS=${STEPS:-1000}
REPS=${REPS:-3}
if [ -z "${CONFIGS:-}" ]; then
  CONFIGS="16:3.5:0:1 32:3.5:0:1 64:3.5:0:1"
  for sw in 8 12 16 24; do
    for om in 3 3.5; do
      CONFIGS="$CONFIGS $sw:$om:0.9:1 $sw:$om:0.95:2 $sw:$om:0.98:4"
    done
  done
fi
TEAMS=${TEAMS:-}
if [ "${BODY:-mesh}" = plano ]; then
  # the thesis's Plano (51 x 51 grid, 157,858 springs) hanging from two corners
  MESH="Plano (grid 51, pinned at two corners)"
  body=(springs --grid 51 --pin 0,50 --energy-every 0 --steps "$STEPS" --device "$DEVICE" --json)
else
  body=(springs "$MESH" --bend 0 --shape 0 --min-dist 1e-9 --max-dist 0.5869 --floor 11
        --energy-every 0 --steps "$STEPS" --device "$DEVICE" --json)
fi

# one JSON field (a number or a string) of a report on stdin
field() { sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" | head -1; }
# a field of the "end" energy record
endf() { awk -v k="\"$1\":" '/"end": \{/ {e=1} e && index($0, k) {gsub(/[ ,]/, "", $0); sub(/.*:/, "", $0); print; exit}'; }

echo "# springs projections: $MESH, $STEPS steps, device $DEVICE, $(date -u +%F' '%H:%M) UTC, load $(cut -d' ' -f1 /proc/loadavg)"
printf '| %-13s | %6s | %5s | %9s | %6s | %-19s | %10s | %10s | %7s | %9s |\n' projection sweeps omega \
  chebyshev team "ms/step min / med" rms_strain max_strain height shape_err
printf '|%s|\n' "---------------|--------|-------|-----------|--------|---------------------|------------|------------|---------|----------"
row() { # label sweeps omega chebyshev team args...
  local label=$1 sw=$2 om=$3 ch=$4 team=$5; shift 5
  local times=() out=""
  for r in $(seq 1 "$REPS"); do
    if [ -n "$team" ] && [ "$team" != "-" ]; then
      out=$(CLSOLVE_SPRINGS_TEAM=$team "$CLSOLVE" "${body[@]}" "$@" 2>&1)
    else
      out=$("$CLSOLVE" "${body[@]}" "$@" 2>&1)
    fi
    local ms
    ms=$(printf '%s\n' "$out" | field ms_per_step)
    [ -n "$ms" ] || { echo "| $label | $sw | $om | $ch | $team | failed: $(printf '%s' "$out" | tail -1) |"; return; }
    times+=("$ms")
  done
  local sorted min med
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  min=$(printf '%s\n' "$sorted" | head -1)
  med=$(printf '%s\n' "$sorted" | sed -n "$(( (${#times[@]} + 1) / 2 ))p")
  local ws
  ws=$(printf '%s\n' "$out" | field work_group_size)
  [ "$team" = "-" ] && team="wg $ws"
  [ -z "$team" ] && team="auto"
  printf '| %-13s | %6s | %5s | %9s | %6s | %8.4f / %8.4f | %10.3e | %10.3e | %7.4f | %9.3e |\n' "$label" "$sw" \
    "$om" "$ch" "$team" "$min" "$med" "$(printf '%s\n' "$out" | endf rms_strain)" \
    "$(printf '%s\n' "$out" | endf max_strain)" "$(printf '%s\n' "$out" | field height_ratio)" \
    "$(printf '%s\n' "$out" | field shape_error)"
}
row gauss-seidel 1 - - - --projection gauss-seidel
last=""
for c in $CONFIGS; do
  IFS=: read -r sw om ch dl <<<"$c"
  label=jacobi
  [ "$ch" != 0 ] && label=jacobi-cheb
  row "$label" "$sw" "$om" "$ch/$dl" "" --projection jacobi --omega "$om" --iterations "$sw" \
    --chebyshev "$ch" --chebyshev-delay "$dl"
  last=$c
done
IFS=, read -r -a teams <<<"${TEAMS:-}"
for t in "${teams[@]}"; do
  IFS=: read -r sw om ch dl <<<"$last"
  row jacobi "$sw" "$om" "$ch/$dl" "$t" --projection jacobi --omega "$om" --iterations "$sw" \
    --chebyshev "$ch" --chebyshev-delay "$dl"
done
