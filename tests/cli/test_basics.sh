#!/usr/bin/env bash
# The basics a packaged program has: --version on both programs (the one
# version of CMakeLists.txt and the commit); --help on every subcommand,
# exit 0; help texts, man pages and bash completion from one source
# (cli/usage/*.txt) and in step with the options the code accepts; man pages
# that groff renders without a warning; a completion that completes;
# `cmake --install` with everything in its place and a systemd unit that
# systemd-analyze accepts; clsolved --config FILE; sd_notify READY=1 and
# STOPPING=1 to $NOTIFY_SOCKET under mpirun.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
B=$(dirname "$CLSOLVE")
SRC=$(cd "$here/../.." && pwd)
t=$TEST_TMP

# --- --version: project(VERSION) and the commit ---
want=$(sed -n 's/^project(clsolve VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
for p in "$CLSOLVE" "$CLSOLVED"; do
    expect_exit 0 "$p" --version
    got=$(sed -n "s/^$(basename "$p") $want (commit \([0-9a-f]*\)\(-dirty\)\{0,1\})\$/\1/p" "$t/out")
    if ! git -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
        # not a git checkout: the commit is unknown
        grep -qx "$(basename "$p") $want (commit unknown)" "$t/out" && ok || bad "--version outside git: $(cat "$t/out")"
    elif [ -z "$got" ]; then
        bad "$(basename "$p") --version: '$(cat "$t/out")', expected version $want and a commit"
    else
        # built from this history: the commit is HEAD or one before it
        git -C "$SRC" merge-base --is-ancestor "$got" HEAD && ok || bad "$(basename "$p") was built from $got, not from this history"
    fi
done
[ -n "$want" ] && ok || bad "no version in CMakeLists.txt"

# --- --help everywhere, exit 0 ---
expect_exit 0 "$CLSOLVE" --help
grep -q "^usage: clsolve COMMAND" "$t/out" && ok || bad "clsolve --help"
expect_exit 2 "$CLSOLVE"
cmds=$($PY -c "import json,sys; print(' '.join(c for c in json.load(open(sys.argv[1]))['commands'] if c))" "$B/completion/clsolve.json")
[ "$(wc -w <<<"$cmds")" -ge 16 ] && ok || bad "commands in the help source: $cmds"
for c in $cmds; do
    expect_exit 0 "$CLSOLVE" "$c" --help
    head -1 "$t/out" | grep -q "^usage: clsolve $c" && ok || bad "$c --help: $(head -1 "$t/out")"
    expect_exit 0 "$CLSOLVE" "$c" -h
    expect_exit 0 "$CLSOLVE" help "$c"
done
expect_exit 0 "$CLSOLVE" solve A.mtx --tol 1e-3 --help   # anywhere before "--", nothing is read
expect_exit 0 "$CLSOLVED" --help
grep -q -- "--config FILE" "$t/out" && ok || bad "clsolved --help: $(head -3 "$t/out")"

# --- one source: the code's options are the documented ones ---
$PY "$here/cli_options.py" "$SRC/cli" "$B/completion/clsolve.json" "$SRC/cli/usage/clsolve.txt" \
    && ok || bad "clsolve's options and its help differ"
# clsolved: every option in its table is one the code knows, and back
$PY - "$SRC/cli/clsolved.c" "$B/completion/clsolved.json" <<'PY' && ok || bad "clsolved's options and its help differ"
import json, re, sys
src = open(sys.argv[1]).read()
table = re.search(r"clsolved_options\[\] = \{(.*?)\};", src, re.S).group(1)
code = set(re.findall(r'"(--[\w-]+)"', table)) | {"--config", "--version", "--help", "-h"}
doc = set(json.load(open(sys.argv[2]))["commands"][""]["options"])
if code != doc:
    print("code only:", sorted(code - doc), "help only:", sorted(doc - code))
    sys.exit(1)
PY

# --- man pages: groff renders them without a warning, every command there ---
for m in "$B/man/clsolve.1" "$B/man/clsolved.8"; do
    w=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$m" 2>&1)
    [ -z "$w" ] && ok || bad "$(basename "$m"): groff: $w"
    LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$m" >"$t/man.txt" 2>"$t/man.err" && [ -s "$t/man.txt" ] && ok || bad "man -l $m"
done
for c in $cmds; do
    grep -q "^   $c\$" <(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$B/man/clsolve.1" 2>/dev/null) && ok || bad "clsolve(1) has no section for $c"
done
grep -q -- "--max-queued" <(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$B/man/clsolved.8" 2>/dev/null) && ok || bad "clsolved(8) without its options"

# --- bash completion ---
complete_words() { # complete_words FILE WORD... : what TAB offers after the last word
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); f=$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/"); "$f"; echo "${COMPREPLY[*]}"' _ "$@"
}
[ "$(complete_words "$B/completion/clsolve" clsolve so)" = solve ] && ok || bad "complete 'clsolve so'"
# the preconditioner's parameters (--precond-degree, ...) complete too
[ "$(complete_words "$B/completion/clsolve" clsolve solve --prec)" = "--precond --precond-degree --precond-lanczos --precond-sweeps --precond-shift --precond-reuse --precond-setup --precond-coupling --precision" ] && ok \
    || bad "complete 'clsolve solve --prec': $(complete_words "$B/completion/clsolve" clsolve solve --prec)"
# --precond: the names, then PETSc's that it takes too (solver/pc/kinds.def)
[ "$(complete_words "$B/completion/clsolve" clsolve solve --precond "")" = "none jacobi chebyshev ic0 amg auto identity pbjacobi diagonal cheby cheb icc ic bjacobi gamg sa ml" ] && ok \
    || bad "complete --precond values: $(complete_words "$B/completion/clsolve" clsolve solve --precond "")"
for w in $(complete_words "$B/completion/clsolve" clsolve submit --precond ""); do
    # a name it refuses is a usage error (2) before the missing file (1)
    "$CLSOLVE" solve "$t/no-such.mtx" --precond "$w" >/dev/null 2>&1
    [ $? -ne 2 ] && ok || bad "completion offers --precond $w, which the command line refuses"
done
# -o OUT.csv|.ply|.vtk: file names, not those words (issue 30)
mkdir -p "$t/comp" && : >"$t/comp/mesh.ply"
[ "$(cd "$t/comp" && complete_words "$B/completion/clsolve" clsolve curvature x.obj -o "")" = mesh.ply ] && ok \
    || bad "complete 'clsolve curvature x.obj -o ': $(cd "$t/comp" && complete_words "$B/completion/clsolve" clsolve curvature x.obj -o "")"
[ "$(complete_words "$B/completion/clsolved" clsolved --max-q)" = "--max-queued" ] && ok || bad "complete clsolved --max-q"

# --- cmake --install: programs, man pages, completion, the unit ---
rm -rf "$t/root"
if DESTDIR="$t/root" cmake --install "$B" --prefix /usr >"$t/install.log" 2>&1; then ok; else bad "cmake --install: $(tail -5 "$t/install.log")"; fi
for f in usr/bin/clsolve usr/bin/clsolved usr/share/man/man1/clsolve.1 usr/share/man/man8/clsolved.8 \
         usr/share/bash-completion/completions/clsolve usr/share/bash-completion/completions/clsolved \
         usr/lib/systemd/system/clsolved.service usr/share/doc/clsolve/clsolved.conf.example; do
    [ -s "$t/root/$f" ] && ok || bad "cmake --install did not install $f"
done
[ -x "$t/root/usr/bin/clsolve" ] && "$t/root/usr/bin/clsolve" --version >/dev/null && ok || bad "installed clsolve does not run"
u=$t/root/usr/lib/systemd/system/clsolved.service
sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$u" | grep -q "^ExecStart=.* /usr/bin/clsolved --config /etc/clsolve/clsolved.conf" \
    && grep -q '^Type=notify' "$u" \
    && grep -q '^NotifyAccess=all' "$u" && grep -q '^EnvironmentFile=-/etc/default/clsolved' "$u" && ok \
    || bad "installed unit: $(grep -E '^(Type|ExecStart|EnvironmentFile|NotifyAccess)' "$u")"
grep -q '@[A-Z_]*@' "$u" && bad "unit with unfilled @VARS@" || ok
if command -v systemd-analyze >/dev/null; then
    # verify resolves the binaries: point the copy at this build's
    sed "s#/usr/bin/clsolved#$CLSOLVED#; s#/usr/bin/mpirun#$(command -v mpirun)#" "$u" >"$t/clsolved.service"
    v=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$t/clsolved.service" 2>&1 | grep -v "Cannot add dependency job\|Failed to resolve\|^$" | grep -i "clsolved.service")
    [ -z "$v" ] && ok || bad "systemd-analyze verify: $v"
fi

# --- clsolved --config FILE (the command line wins) ---
D=$t/data
rm -rf "$D" "$D".*
cat >"$t/clsolved.conf" <<CONF
# a comment, then a blank line

listen = 127.0.0.1:1
data-dir = $D
max-queued = 3
timeout=30
CONF
daemon_start 1 "$D" --config "$t/clsolved.conf" || { bad "daemon with --config"; finish; }
# daemon_start's --listen 127.0.0.1:0 came after the file's port 1: it listens
[ "$(cat "$D.port")" != 1 ] && curl -sf "$DURL/healthz" >/dev/null && ok || bad "--config daemon does not serve"
daemon_stop 60 && ok || bad "--config daemon stop"
"$CLSOLVED" --config "$t/clsolved.conf" --data-dir "$D" --listen 127.0.0.1:0 --max-queued nope >"$t/out" 2>&1
[ $? = 2 ] && grep -q -- "--max-queued: 'nope'" "$t/out" && ok || bad "bad flag after --config: $(cat "$t/out")"

# --- sd_notify: READY=1 once listening, STOPPING=1 when draining ---
if grep -q "CLS_HAVE_SYSTEMD" "$B/net/CMakeFiles/clsolved.dir/flags.make" 2>/dev/null; then
    sock=$t/notify.sock
    rm -f "$sock" "$t/notify.log"
    $PY - "$sock" "$t/notify.log" <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(1)
t0 = time.time()
with open(sys.argv[2], "a") as log:
    while time.time() - t0 < 180:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            continue
        log.write(msg.replace("\n", " | ") + "\n")
        log.flush()
        if "STOPPING=1" in msg:
            break
PY
    lpid=$!
    for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
    rm -rf "$D" "$D".*
    NOTIFY_SOCKET=$sock daemon_start 2 "$D" || bad "daemon under NOTIFY_SOCKET"
    for _ in $(seq 1 100); do grep -q READY=1 "$t/notify.log" 2>/dev/null && break; sleep 0.1; done
    grep -q "READY=1.*STATUS=listening on 127.0.0.1:0 (port $(cat "$D.port")), 2 ranks" "$t/notify.log" \
        && ok || bad "no READY=1 with the port: $(cat "$t/notify.log" 2>/dev/null)"
    daemon_stop 60 && ok || bad "stop under NOTIFY_SOCKET"
    wait "$lpid"
    grep -q "STOPPING=1" "$t/notify.log" && ok || bad "no STOPPING=1: $(cat "$t/notify.log")"
    [ "$(grep -c READY=1 "$t/notify.log")" = 1 ] && ok || bad "READY=1 sent $(grep -c READY=1 "$t/notify.log") times"
else
    echo "note: built without libsystemd; sd_notify not tested" >&2
fi
finish
