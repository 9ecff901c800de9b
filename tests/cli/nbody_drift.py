#!/usr/bin/env python3
"""nbody_drift.py: clsolve nbody's energy drift against an independent
integrator written here with numpy (issue 26, item 6). Run by
test_nbody_drift.sh:

    nbody_drift.py --clsolve BIN --tmp DIR

The initial conditions are clsolve's own Plummer sphere of 64 bodies
(`--steps 0 -o ic.csv`: the state the device holds, floats written so
they read back exactly); both integrators start from that file. The
reference integrates in double with the same scheme (leapfrog
kick-drift-kick; semi-implicit Euler v += a dt, x += v dt), the same
softening (eps2 = 1e-4 added to |r|^2) and the same energy E = sum 1/2 m
v^2 - 1/2 sum_{i != j} m_i m_j / sqrt(|r_ij|^2 + eps2), measured at every
step with velocities in step with positions. Checks, per integrator:
  * the reference's largest drift lies mid-run and is several times the
    end drift (what a drift taken at saved frames only misses);
  * clsolve's max_rel_drift matches the reference's largest drift (2%),
    and at the same step (within 2), without frames and with frames
    every 50 steps; its end drift matches the reference's end drift;
  * max_rel_drift >= rel_drift.
Exits 1 on any failure; prints the figures.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

EPS2 = 1e-4  # clsolve's default softening 1e-2, squared
DT, STEPS = 0.01, 200


def run(args, cwd):
    p = subprocess.run([A.clsolve] + args, cwd=cwd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("clsolve %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p.stdout


def reference(path, integrator):
    """Energy drift |E_s - E_0| / |E_0| at every step s = 0 .. STEPS."""
    d = np.loadtxt(path, delimiter=",", skiprows=1)
    x, v, m = d[:, 0:3].copy(), d[:, 3:6].copy(), d[:, 6].copy()

    def acc(x):
        r = x[None, :, :] - x[:, None, :]  # r_ij = x_j - x_i
        inv3 = ((r ** 2).sum(-1) + EPS2) ** -1.5
        return (r * (m[None, :, None] * inv3[:, :, None])).sum(1)

    def energy(x, v):
        r = x[None, :, :] - x[:, None, :]
        dist = np.sqrt((r ** 2).sum(-1) + EPS2)
        np.fill_diagonal(dist, np.inf)
        return 0.5 * (m * (v ** 2).sum(1)).sum() - 0.5 * (m[:, None] * m[None, :] / dist).sum()

    e = [energy(x, v)]
    a = acc(x)
    for _ in range(STEPS):
        if integrator == "leapfrog":
            v = v + 0.5 * DT * a
            x = x + DT * v
            a = acc(x)
            v = v + 0.5 * DT * a
        else:
            v = v + DT * a
            x = x + DT * v
            a = acc(x)
        e.append(energy(x, v))
    e = np.array(e)
    return np.abs(e - e[0]) / abs(e[0])


def main():
    fails = 0

    def check(cond, what):
        nonlocal fails
        print(("ok: " if cond else "FAIL: ") + what)
        fails += 0 if cond else 1

    os.makedirs(A.tmp, exist_ok=True)
    run(["nbody", "--plummer", "64", "--steps", "0", "-o", "ic.csv"], A.tmp)
    ic = os.path.join(A.tmp, "ic.csv")
    for integ in ("leapfrog", "euler"):
        ref = reference(ic, integ)
        rmax, rstep, rend = float(ref.max()), int(ref.argmax()), float(ref[-1])
        print("%s reference (numpy, double): max drift %.4g at step %d, end %.4g"
              % (integ, rmax, rstep, rend))
        check(0 < rstep < STEPS and rmax > 4 * rend,
              "%s: the reference's largest drift is mid-run and above the end drift" % integ)
        for every in (0, 50):
            args = ["nbody", "--bodies", "ic.csv", "--integrator", integ, "--dt", str(DT),
                    "--steps", str(STEPS), "--json"]
            if every:
                args += ["--every", str(every), "-o", "f_%s.csv" % integ]
            e = json.loads(run(args, A.tmp))["energy"]
            dmax, dstep, dend = e["max_rel_drift"], e.get("max_drift_step"), e["rel_drift"]
            what = "%s%s" % (integ, ", frames every %d" % every if every else "")
            print("%s clsolve: max drift %s at step %s, end %.4g" % (what, dmax, dstep, dend))
            check(abs(dmax - rmax) <= 0.02 * rmax,
                  "%s: max_rel_drift %.4g matches the reference's %.4g" % (what, dmax, rmax))
            check(dstep is not None and abs(dstep - rstep) <= 2,
                  "%s: at step %s (reference %d)" % (what, dstep, rstep))
            check(abs(dend - rend) <= 0.05 * rend + 1e-6,
                  "%s: end drift %.4g matches the reference's %.4g" % (what, dend, rend))
            check(dmax >= dend, "%s: max_rel_drift >= rel_drift" % what)
    print("nbody_drift: %d failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--clsolve", required=True)
    ap.add_argument("--tmp", required=True)
    A = ap.parse_args()
    sys.exit(main())
