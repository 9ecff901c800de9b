#!/usr/bin/env bash
# bench/pocl-vs-petsc.sh: CG ms per iteration for poisson3d N on PoCL's CPU
# device beside PETSc's KSPCG (petsc4py, mpirun -np 1 and -np 2), same matrix,
# same iteration count, same command. Needs `deploy/install-deps.sh --bench`.
#   bash bench/pocl-vs-petsc.sh [N] [ITERS]      (defaults 64 200)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-64}
IT=${2:-200}
B=${BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$B/clsolve" bench --sizes "$N" --iters "$IT" --device cpu
for np in 1 2; do
    mpirun --oversubscribe -np $np /usr/bin/python3 bench/peers/petsc_cg.py --n "$N" --iters "$IT"
done
