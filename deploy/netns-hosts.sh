#!/usr/bin/env bash
# netns-hosts.sh: a multi-host MPI cluster on one machine, for tests.
#
# Creates N network namespaces (PREFIX1..PREFIXN), each a "host" with its own
# address SUBNET.i on a veth link, all joined by a bridge that lives in a
# hub namespace (PREFIXhub), so nothing is added to the machine's own network
# namespace and no traffic can leave the machine: the addresses exist only
# inside namespaces this script creates. Open MPI then treats each address
# as a separate node: mpirun runs in host 1's namespace and starts its
# daemons in the others through deploy/netns-rsh.sh (plm_rsh_agent), and the
# ranks talk TCP over the veth links.
#
#   deploy/netns-hosts.sh up [N]      create N hosts (default 3), print them
#   deploy/netns-hosts.sh down        remove them
#   deploy/netns-hosts.sh mpirun ARGS run mpirun from host 1 across the hosts
#                                     (adds --host, the rsh agent, TCP only)
#
# Environment: CLS_NETNS_PREFIX (default clsn), CLS_NETNS_SUBNET (default
# 10.77.0, a /24), CLS_NETNS_N (hosts for `mpirun`, default: all that exist),
# CLS_NETNS_SLOTS (slots per host, default 4), CLS_NETNS_TMP (where each
# host's own TMPDIR goes, default /tmp).
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
P=${CLS_NETNS_PREFIX:-clsn}
NET=${CLS_NETNS_SUBNET:-10.77.0}
HUB=${P}hub

exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

down() {
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P}([0-9]+|hub)\$" || true); do
        ip netns del "$ns" 2>/dev/null || true # veth pairs die with their namespace
        rm -rf "${CLS_NETNS_TMP:-/tmp}/$ns"
    done
}

up() {
    local n=${1:-3}
    down
    ip netns add "$HUB"
    ip -n "$HUB" link set lo up
    ip -n "$HUB" link add br0 type bridge
    ip -n "$HUB" link set br0 up
    for i in $(seq 1 "$n"); do
        local ns=$P$i
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        # the pair is created inside the hub, then one end moves to the host
        ip -n "$HUB" link add "h$i" type veth peer name "eth$i"
        ip -n "$HUB" link set "eth$i" netns "$ns"
        ip -n "$HUB" link set "h$i" master br0
        ip -n "$HUB" link set "h$i" up
        ip -n "$ns" addr add "$NET.$i/24" dev "eth$i"
        ip -n "$ns" link set "eth$i" up
    done
    # wait for the links to come up (and, with ping at hand, check them)
    for i in $(seq 1 "$n"); do
        local tries=0
        until ip -n "$P$i" -o link show "eth$i" | grep -q "LOWER_UP"; do
            tries=$((tries + 1))
            [ $tries -lt 20 ] || { echo "netns-hosts: eth$i in $P$i stays down" >&2; return 1; }
            sleep 0.25
        done
        if [ "$i" -gt 1 ] && command -v ping >/dev/null; then
            ip netns exec "${P}1" ping -c1 -W2 "$NET.$i" >/dev/null ||
                { echo "netns-hosts: $NET.$i unreachable from ${P}1" >&2; return 1; }
        fi
    done
    for i in $(seq 1 "$n"); do echo "$P$i $NET.$i"; done
}

hosts() {
    local n=${CLS_NETNS_N:-}
    if [ -z "$n" ]; then
        n=0
        while exists "$P$((n + 1))"; do n=$((n + 1)); done
    fi
    local h=""
    for i in $(seq 1 "$n"); do h="$h${h:+,}$NET.$i:${CLS_NETNS_SLOTS:-4}"; done
    echo "$h"
}

case "${1:-}" in
up) shift; up "$@" ;;
down) down ;;
hosts) hosts ;;
mpirun)
    shift
    exists "${P}1" || { echo "netns-hosts: no hosts; run '$0 up' first" >&2; exit 1; }
    export CLS_NETNS_PREFIX=$P CLS_NETNS_SUBNET=$NET
    # one session directory per host (see netns-rsh.sh)
    export TMPDIR=${CLS_NETNS_TMP:-/tmp}/${P}1
    mkdir -p "$TMPDIR"
    exec ip netns exec "${P}1" mpirun --host "$(hosts)" \
        --mca plm_rsh_agent "$here/netns-rsh.sh" \
        --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" \
        --mca oob_tcp_if_include "$NET.0/24" "$@"
    ;;
*)
    sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
