#!/usr/bin/env bash
# A multi-host solve without real hosts: three network namespaces joined by
# veth links and a bridge (deploy/netns-hosts.sh), each a "host" with its own
# address in 10.77.0.0/24 (inside the namespaces only), Open MPI launching its
# daemons into them through deploy/netns-rsh.sh (plm_rsh_agent) and the ranks
# talking TCP only (btl tcp,self). The solve across the three hosts must
# equal the one-rank solve: same iterations, x within 1e-10 (in fact the
# same bits). Skips (77) where namespaces cannot be made (not root, no
# iproute2, a container without CAP_NET_ADMIN).
. "$(dirname "$0")/lib.sh"
t=$TEST_TMP
deploy=$(cd "$here/../../deploy" && pwd)
export CLS_NETNS_PREFIX=clst$$ CLS_NETNS_SUBNET=${CLS_NETNS_SUBNET:-10.77.0}
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-1}

skip() { echo "SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no iproute2 (ip)"
command -v mpirun >/dev/null || skip "no mpirun"
if ! ip netns add "${CLS_NETNS_PREFIX}probe" 2>$t/probe.err; then
    skip "this machine refuses network namespaces: $(cat $t/probe.err)"
fi
ip netns del "${CLS_NETNS_PREFIX}probe"
trap '"$deploy/netns-hosts.sh" down' EXIT
"$deploy/netns-hosts.sh" up 3 >$t/hosts.out 2>&1 || skip "could not build the namespace hosts: $(cat $t/hosts.out)"
echo "hosts:"; sed 's/^/  /' $t/hosts.out

NX=("$deploy/netns-hosts.sh" mpirun --map-by node -x CLSOLVE_CACHE_DIR -x POCL_MAX_PTHREAD_COUNT)
"${NX[@]}" -np 3 sh -c 'echo "rank $OMPI_COMM_WORLD_RANK: netns $(ip netns identify $$), $(ip -4 -o addr show scope global | awk "{print \$4}")"' \
    >$t/where.out 2>$t/where.err
rc=$?
[ $rc = 0 ] && ok || bad "mpirun across the namespaces: exit $rc: $(head -5 $t/where.err)"
sort $t/where.out | sed 's/^/  /'
[ "$(sed 's/.*netns \([^,]*\),.*/\1/' $t/where.out | sort -u | wc -l)" = 3 ] && ok || bad "ranks not in three namespaces"

"$CLSOLVE" gen poisson3d 12 -o $t/p3.mtx >/dev/null
cases=("$t/p3.mtx --method cg" "$t/p3.mtx --method pipecg --precond jacobi")
[ -f "$CLSOLVE_DATA/matrices/ani1.mtx" ] && cases+=("$CLSOLVE_DATA/matrices/ani1.mtx --method cg")
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    "$CLSOLVE" solve $c --tol 1e-10 --min-rows-per-part 1 --json -o $t/x1.mtx >$t/one.json 2>$t/one.err
    [ $? = 0 ] && ok || bad "one rank ($c): $(cat $t/one.err)"
    # shellcheck disable=SC2086
    "${NX[@]}" -np 3 "$CLSOLVE" solve $c --tol 1e-10 --min-rows-per-part 1 --json -o $t/x3.mtx \
        >$t/three.json 2>$t/three.err
    rc=$?
    [ $rc = 0 ] && ok || { bad "three hosts ($c): exit $rc: $(grep -v '^[- ]' $t/three.err | head -5)"; continue; }
    i1=$(json_get $t/one.json "j['iterations']")
    i3=$(json_get $t/three.json "j['iterations']")
    $PY - $t/x1.mtx $t/x3.mtx "$i1" "$i3" <<'PY' && ok || bad "three hosts ($c): differs from one rank"
import sys
def vec(p):
    return [float(l) for l in [l for l in open(p) if not l.startswith('%')][1:]]
a, b = vec(sys.argv[1]), vec(sys.argv[2])
i1, i3 = int(sys.argv[3]), int(sys.argv[4])
num = sum((u - v) ** 2 for u, v in zip(a, b)) ** 0.5
den = sum(u * u for u in a) ** 0.5
print(f"  {i1} vs {i3} iterations, |x3 - x1|/|x1| = {num / den:.3e}, identical bits: {a == b}")
sys.exit(0 if abs(i1 - i3) <= 1 and len(a) == len(b) and num <= 1e-10 * den else 1)
PY
    echo "  $c: parts $(json_get $t/three.json "[(d['rank'], d['rows'], d['ghosts']) for d in j['devices']]"), $(json_get $t/three.json "round(j['times']['ms_per_iteration'], 3)") ms/iteration over TCP"
done
finish
