#!/usr/bin/env bash
# netns-rsh.sh: Open MPI's plm_rsh_agent for the namespace "hosts" of
# netns-hosts.sh. mpirun calls it as ssh would be called:
#     netns-rsh.sh [ssh options] HOST COMMAND...
# and it runs COMMAND (the orted line) in the namespace whose address is HOST
# (CLS_NETNS_SUBNET.i -> CLS_NETNS_PREFIX i), with the caller's environment.
set -eu
P=${CLS_NETNS_PREFIX:-clsn}
NET=${CLS_NETNS_SUBNET:-10.77.0}
# skip ssh-style options mpirun may pass (-x, -o Foo=bar, ...)
while [ $# -gt 0 ]; do
    case "$1" in
    -o | -p | -l | -i) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
host=$1
shift
case "$host" in
"$NET".*) ns=$P${host##*.} ;;
*) echo "netns-rsh: $host is not one of the $NET.* namespace hosts" >&2; exit 255 ;;
esac
# every "host" shares this machine's /tmp and host name, so Open MPI's
# session directories would collide (a daemon finishing first would remove
# the others'): each host gets its own
export TMPDIR=${CLS_NETNS_TMP:-/tmp}/$ns
mkdir -p "$TMPDIR"
exec ip netns exec "$ns" /bin/sh -c "$*"
