#!/usr/bin/env python3
# Kill tests of pmlab-mpi: SIGKILL one rank (mpirun aborts the rest) or the whole job at random
# points, restart with the same rank count (sometimes killing the restart too), and require the
# finished result to be bit-identical to the fault-free one; --mutate expects the negative
# control to be caught (some trial ends with a wrong result).
import argparse
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def mpi_env():
    env = dict(os.environ)
    # Open MPI refuses to start as root (CI containers) unless told twice; the test says so
    # itself rather than asking users to set variables.
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    # Ranks oversubscribe a small machine: yield instead of spinning in collectives.
    env["OMPI_MCA_mpi_yield_when_idle"] = "1"
    return env


def command(args, pool, extra=()):
    return (["mpirun", "--oversubscribe", "-np", str(args.np), args.binary, "run", args.kernel,
             "--pool", pool, "--scheme", args.scheme] + args.params.split() + list(extra))


def rank_pids(mpirun_pid):
    """The pmlab-mpi processes mpirun started (its children, by /proc)."""
    pids = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == mpirun_pid:
                pid = int(stat.split("/")[2])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"pmlab-mpi" in f.read():
                        pids.append(pid)
        except (OSError, IndexError, ValueError):
            pass
    return pids


def start(args, pool, extra):
    """Starts the job; returns it once every rank's pool exists (or it ended), with the time."""
    p = subprocess.Popen(command(args, pool, extra), env=mpi_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 30
    while len(glob.glob(os.path.join(pool, "rank-*.pool"))) < args.np and p.poll() is None:
        if time.time() > deadline:
            break
        time.sleep(0.002)
    return p, time.time()


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_and_kill(args, pool, rng, extra, window):
    """Starts the job and kills it at a random point once every pool exists; returns whether it
    was still running when killed and the kill's delay after the pools existed (s)."""
    p, _ = start(args, pool, extra)
    delay = rng.uniform(0, window)
    time.sleep(delay)
    ranks = rank_pids(p.pid)  # before any kill: mpirun's children
    killed = p.poll() is None
    if killed:
        # A rank may end between the poll and its kill (the run finishing): not an error.
        if ranks and rng.random() < args.one_rank:
            kill(rng.choice(ranks))  # one rank; mpirun aborts the others
        else:
            for pid in ranks:  # the whole job: its ranks at once (own process groups) ...
                kill(pid)
            try:
                os.killpg(p.pid, signal.SIGKILL)  # ... and mpirun
            except ProcessLookupError:
                pass
    try:
        p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
    # A rank mpirun did not take down must be gone (its pool unlocked) before the restart.
    for pid in ranks:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.time() + 10
    while not all(gone(pid) for pid in ranks) and time.time() < deadline:
        time.sleep(0.005)
    return killed, delay


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--scheme", default="lp")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--params", default="")
    ap.add_argument("--trials", type=int, default=int(os.environ.get("PMLAB_MPI_TRIALS", "5")))
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--mutate", default="")
    ap.add_argument("--one-rank", type=float, default=0.5,
                    help="share of kills that take one rank (the rest: the whole job)")
    ap.add_argument("--json-out", default="",
                    help="write each trial (kill delay, run time, the restart's --json report)")
    a = ap.parse_args()
    if shutil.which("mpirun") is None:
        print("SKIP: mpirun not found (install openmpi-bin and libopenmpi-dev)")
        return 77
    rng = random.Random(a.seed)
    extra = ["--mutate", a.mutate] if a.mutate else []
    # A fault-free run first: how long a run takes once its pools exist (the kills' window).
    tmp = tempfile.mkdtemp(prefix="pmlab-mpi-kill-")
    try:
        p, t0 = start(a, os.path.join(tmp, "pools"), [])
        out = p.communicate(timeout=120)[0].decode()
        run_seconds = time.time() - t0
        window = max(0.05, 0.7 * run_seconds)  # less its verification
        if p.returncode != 0 or "verified bit-exact" not in out:
            print(f"the fault-free run failed, exit {p.returncode}:\n{out}")
            return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wrong = resumed = 0
    records = []
    for trial in range(a.trials):
        tmp = tempfile.mkdtemp(prefix="pmlab-mpi-kill-")
        pool = os.path.join(tmp, "pools")
        try:
            was_running, delay = run_and_kill(a, pool, rng, extra, window)
            killed_again = was_running and rng.random() < 0.3  # a failure during recovery too
            if killed_again:
                run_and_kill(a, pool, rng, extra, window)
            report = os.path.join(tmp, "report.json")
            p, _ = start(a, pool, extra + ["--json", report])
            ranks = rank_pids(p.pid)
            try:  # a rule that leaves ranks out of step may also hang them in a collective
                out, rc = p.communicate(timeout=max(20.0, 20 * window))[0].decode(), p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                for pid in ranks:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                out, rc = p.communicate()[0].decode() + "\n(hung: killed)", -1
            resumed += "resumed" in out
            ok = rc == 0 and "verified bit-exact" in out
            record = {"trial": trial, "killed": was_running, "kill_delay_s": delay,
                      "run_s": run_seconds, "killed_again": killed_again,
                      "resumed": "resumed" in out, "exit": rc, "bit_exact": ok}
            if os.path.exists(report):
                with open(report) as f:
                    record["report"] = json.load(f)
            records.append(record)
            if not ok:
                wrong += 1
                if not a.mutate:
                    print(f"trial {trial} (seed {a.seed}) FAILED, exit {rc}:\n{out}")
                else:
                    print(f"trial {trial}: wrong as expected (exit {rc})")
            else:
                lines = [ln for ln in out.splitlines() if ln.startswith("rank ")]
                print(f"trial {trial}: " + ("; ".join(lines) if lines else out.strip()))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{a.kernel} {a.scheme} np={a.np}: {a.trials} trials, {resumed} resumed, "
          f"{wrong} not bit-exact (seed {a.seed})")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"kernel": a.kernel, "scheme": a.scheme, "np": a.np, "params": a.params,
                       "seed": a.seed, "mutate": a.mutate, "trials": records}, f, indent=1)
    if a.mutate:
        if wrong == 0:
            print(f"negative control {a.mutate} NOT caught")
            return 1
        print(f"negative control {a.mutate} caught in {wrong} of {a.trials} trials")
        return 0
    if resumed == 0:
        print("no trial resumed a run: the kills all missed (vacuous)")
        return 1
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
