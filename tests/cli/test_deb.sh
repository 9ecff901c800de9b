#!/usr/bin/env bash
# The Debian package (cmake/package.cmake): `cpack -G DEB` on this build
# gives a package that declares what the programs need (the libraries they
# link, mpirun, an OpenCL platform) and holds both programs, their man pages
# and completion, the systemd unit and the conffile; `dpkg -i` installs it
# (dependencies checked by dpkg itself), its postinst makes the clsolve user
# and a token only that user reads; the installed clsolve solves a shipped
# example to the same bits as the build's; the installed clsolved, run as
# the clsolve user with the packaged configuration (token included),
# answers an authenticated job with the same x and refuses an unauthenticated
# request; `dpkg --purge` removes the programs, the token and the state.
# The install part needs root and no clsolve package already installed
# (exit 77 otherwise: this test never replaces an administrator's package).
# Never in the sanitized stage: its binaries need the sanitizer runtime.
. "$(dirname "$0")/lib.sh"
B=$(dirname "$CLSOLVE")
src=$here/../..
t=$TEST_TMP
rm -rf "$t/pkg" "$t/run"
mkdir -p "$t/pkg" "$t/run"

if ! command -v cpack >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
    echo "SKIP: cpack or dpkg-shlibdeps (dpkg-dev) missing: deploy/install-deps.sh --test installs them" >&2
    exit 77
fi
if ! (cd "$B" && cpack -G DEB -B "$t/pkg") >"$t/cpack.log" 2>&1; then
    bad "cpack -G DEB failed: $(tail -5 "$t/cpack.log")"
    finish
fi
ok
deb=$(ls "$t"/pkg/clsolve_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && ok || { bad "cpack wrote no clsolve_*.deb in $t/pkg"; finish; }

# --- what the package declares and holds ---
dpkg-deb --field "$deb" Package Version Architecture Depends >"$t/fields" 2>&1
grep -q "^Package: clsolve$" "$t/fields" && ok || bad "package name: $(cat "$t/fields")"
ver=$("$CLSOLVE" --version | head -1 | grep -o '[0-9][0-9.]*' | head -1)
grep -q "^Version: $ver$" "$t/fields" && ok || bad "package version is not the program's ($ver): $(grep Version "$t/fields")"
deps=$(grep "^Depends:" "$t/fields")
for want in libmicrohttpd libjansson libopenmpi ocl-icd-libopencl1 zlib1g libc6 openmpi-bin \
    "pocl-opencl-icd | opencl-icd" adduser; do
    case "$deps" in *"$want"*) ok ;; *) bad "Depends lacks $want: $deps" ;; esac
done
dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's#^\./#/#' >"$t/contents"
for f in /usr/bin/clsolve /usr/bin/clsolved /usr/share/man/man1/clsolve.1 /usr/share/man/man8/clsolved.8 \
    /usr/share/bash-completion/completions/clsolve /usr/share/bash-completion/completions/clsolved \
    /usr/lib/systemd/system/clsolved.service /etc/clsolve/clsolved.conf \
    /usr/share/doc/clsolve/clsolved.conf.example; do
    grep -qx "$f" "$t/contents" && ok || bad "the package does not hold $f"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -x -O ./conffiles 2>/dev/null | grep -qx /etc/clsolve/clsolved.conf &&
    ok || bad "/etc/clsolve/clsolved.conf is not a conffile"
dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -q "postinst" && ok || bad "no postinst"

# --- installed ---
if [ "$(id -u)" != 0 ]; then
    echo "$(basename "$0"): $checks checks, $fails failed (package built and inspected)"
    echo "SKIP: dpkg -i needs root" >&2
    [ "$fails" -eq 0 ] && exit 77 || exit 1
fi
if dpkg-query -W -f '${Status}' clsolve 2>/dev/null | grep -q installed; then
    echo "$(basename "$0"): $checks checks, $fails failed (package built and inspected)"
    echo "SKIP: a clsolve package is already installed here; not replacing it" >&2
    [ "$fails" -eq 0 ] && exit 77 || exit 1
fi
dpid=
cleanup() {
    [ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
    dpkg --purge clsolve >/dev/null 2>&1
}
trap cleanup EXIT
if dpkg -i "$deb" >"$t/dpkg-i.log" 2>&1; then ok; else
    bad "dpkg -i: $(tail -5 "$t/dpkg-i.log")"
    finish
fi
[ "$(dpkg-query -W -f '${Status}' clsolve)" = "install ok installed" ] && ok || bad "dpkg does not record clsolve as installed"
getent passwd clsolve >/dev/null && ok || bad "postinst made no clsolve user"
[ "$(stat -c '%U %a' /etc/clsolve/token 2>/dev/null)" = "clsolve 600" ] &&
    [ "$(wc -c </etc/clsolve/token)" -ge 40 ] && ok || bad "token: $(stat -c '%U %a %s' /etc/clsolve/token 2>&1)"
[ "$(stat -c %U /var/lib/clsolve 2>/dev/null)" = clsolve ] && ok || bad "/var/lib/clsolve is not clsolve's"
grep -q "^ExecStart=.*/usr/bin/mpirun" /usr/lib/systemd/system/clsolved.service &&
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' /usr/lib/systemd/system/clsolved.service |
    grep -q "/usr/bin/clsolved --config /etc/clsolve/clsolved.conf" && ok || bad "the installed unit does not start /usr/bin/clsolved with the conffile"

# the installed program solves a shipped example, to the build's bits
ex=$src/examples/poisson2d-30.mtx
"$CLSOLVE" solve "$ex" -o "$t/run/x-build.mtx" >/dev/null 2>&1
if /usr/bin/clsolve solve "$ex" -o "$t/run/x-deb.mtx" >"$t/solve.out" 2>&1; then ok; else
    bad "installed clsolve solve: $(tail -3 "$t/solve.out")"
fi
same_x() { cmp -s <(sed 2d "$1") <(sed 2d "$2"); } # line 2 names the run
same_x "$t/run/x-build.mtx" "$t/run/x-deb.mtx" && ok || bad "installed clsolve's x differs from the build's"
grep -q converged "$t/solve.out" && ok || bad "installed clsolve: $(cat "$t/solve.out")"

# the installed daemon as the clsolve user, with the packaged configuration
# (its token file) on a free port and PoCL's CPU device
chown clsolve "$t/run"
runuser -u clsolve -- env HOME=/var/lib/clsolve /usr/bin/clsolved --config /etc/clsolve/clsolved.conf \
    --listen 127.0.0.1:0 --port-file "$t/run/port" --device cpu </dev/null >"$t/run/daemon.log" 2>&1 &
dpid=$!
for _ in $(seq 1 600); do [ -s "$t/run/port" ] && break; kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
if [ -s "$t/run/port" ]; then
    ok
    U=http://127.0.0.1:$(cat "$t/run/port")
    code=$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/jobs")
    [ "$code" = 401 ] && ok || bad "a request without the packaged token got $code, not 401"
    id=$("$CLSOLVE" submit "$ex" --server "$U" --token-file /etc/clsolve/token 2>"$t/submit.err")
    if [ -n "$id" ] && "$CLSOLVE" wait "$id" --server "$U" --token-file /etc/clsolve/token \
        -o "$t/run/x-daemon.mtx" --timeout 300 >"$t/wait.out" 2>&1; then ok; else
        bad "job on the installed daemon: $(cat "$t/submit.err" "$t/wait.out" | tail -3)"
    fi
    same_x "$t/run/x-build.mtx" "$t/run/x-daemon.mtx" && ok || bad "the installed daemon's x differs from the build's"
    kill -TERM $dpid
    for _ in $(seq 1 300); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
    kill -0 $dpid 2>/dev/null && bad "the installed daemon did not stop on SIGTERM" || ok
    dpid=
else
    bad "the installed clsolved did not start: $(tail -5 "$t/run/daemon.log")"
fi

# --- purged ---
if dpkg --purge clsolve >"$t/purge.log" 2>&1; then ok; else bad "dpkg --purge: $(tail -3 "$t/purge.log")"; fi
for f in /usr/bin/clsolve /usr/bin/clsolved /etc/clsolve/token /etc/clsolve/clsolved.conf /var/lib/clsolve \
    /usr/lib/systemd/system/clsolved.service; do
    [ -e "$f" ] && bad "$f is left after purge" || ok
done
trap - EXIT
finish
