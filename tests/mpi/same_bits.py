#!/usr/bin/env python3
# pmlab-mpi against pmlab run: a 1-rank (and a 3-rank) distributed run leaves the state
# byte-identical to the single-process pool of the same parameters; a restart with another
# rank count is refused with exit 3.
import os
import shutil
import subprocess
import sys
import tempfile

from kill_restart import mpi_env


def mpirun(np_, binary, args):
    return subprocess.run(["mpirun", "--oversubscribe", "-np", str(np_), binary] + args,
                          env=mpi_env(), capture_output=True, text=True, timeout=120)


def main():
    pmlab, pmlab_mpi = sys.argv[1], sys.argv[2]
    if shutil.which("mpirun") is None:
        print("SKIP: mpirun not found (install openmpi-bin and libopenmpi-dev)")
        return 77
    tmp = tempfile.mkdtemp(prefix="pmlab-mpi-bits-")
    failed = 0
    try:
        cases = [("jacobi", "--n 37 --bs 4 --iters 9 --lp-anchor 2"),
                 ("cg", "--n 101 --bs 8 --iters 12 --nnz 5")]
        for kernel, params in cases:
            single = os.path.join(tmp, f"{kernel}.pool")
            # The reference's bits do not depend on flushing: none runs on any CPU.
            r = subprocess.run([pmlab, "run", kernel, "--pool", single, "--scheme", "lp",
                                "--persist", "none"] + params.split(),
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                print(f"pmlab run {kernel} failed: {r.stdout}{r.stderr}")
                return 1
            for np_ in (1, 3):
                for scheme in ("lp", "base"):
                    d = os.path.join(tmp, f"{kernel}-{np_}-{scheme}")
                    r = mpirun(np_, pmlab_mpi, ["run", kernel, "--pool", d, "--scheme", scheme,
                                                "--compare-with", single] + params.split())
                    ok = r.returncode == 0 and "identical to" in r.stdout
                    print(f"{kernel} np={np_} {scheme}: {'same bytes' if ok else 'FAILED'}")
                    if not ok:
                        print(r.stdout + r.stderr)
                        failed += 1
            # The pools of the 3-rank job, restarted on 2 ranks: refused, exit 3, nothing run.
            d = os.path.join(tmp, f"{kernel}-3-lp")
            r = mpirun(2, pmlab_mpi, ["run", kernel, "--pool", d] + params.split())
            ok = r.returncode == 3 and "written by a job of 3 ranks" in r.stderr
            print(f"{kernel}: restart on 2 ranks of a 3-rank job refused: {ok}")
            failed += not ok
            r = mpirun(4, pmlab_mpi, ["run", kernel, "--pool", d] + params.split())
            ok = r.returncode == 3 and "holds pools of 3 of this job's 4 ranks" in r.stderr
            print(f"{kernel}: restart on 4 ranks of a 3-rank job refused: {ok}")
            failed += not ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
