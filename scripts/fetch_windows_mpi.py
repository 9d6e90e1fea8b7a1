#!/usr/bin/env python3
"""Fetch a Windows MPI SDK for the cross build's check that brasa builds against one (CI's Windows
step): Intel MPI's headers and import library (impi_devel) and its DLL (impi_rt), from their
win_amd64 wheels on PyPI, checked by sha256. They stand in for MS-MPI's SDK, which no registry this
project reaches carries: the same MPI C interface (mpi.h) and an import library to link.

Unpacked into windows-mpi-sdk/ in the test models' cache (fetch_models.cache_dir) as include/, lib/
and bin/, once; prints that directory. Exits 1 when a download or a check fails.
"""
import os
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fetch_models import cache_dir, sha256_of  # noqa: E402  (the test material's cache and its check)

VERSION = "2021.19.0"
# wheel -> (its sha256, the members to take: path inside the wheel's Library/ folder)
WHEELS = {
    f"impi_devel-{VERSION}-py2.py3-none-win_amd64.whl": (
        "4baeaa0e4f41614d4b5ee9acf631b37575d61add5b99281c33bc0bb462bd9d59",
        ["include/mpi.h", "include/mpio.h", "include/mpi_abi.h", "lib/impi.lib"],
    ),
    f"impi_rt-{VERSION}-py2.py3-none-win_amd64.whl": (
        "36c0c123f743cbf9ad781f00f5df85033412632b02d65b0dcc5ad898312dcd64",
        ["bin/impi.dll"],
    ),
}


def main():
    out = os.path.join(cache_dir(), "windows-mpi-sdk")
    done = os.path.join(out, f".{VERSION}")
    if os.path.exists(done):
        print(out)
        return 0
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brasa-windows-mpi-") as tmp:
        for wheel, (digest, members) in WHEELS.items():
            package = wheel.split("-")[0]
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                                "--platform", "win_amd64", "-d", tmp, f"{package}=={VERSION}"],
                               capture_output=True, text=True)
            path = os.path.join(tmp, wheel)
            if r.returncode != 0 or not os.path.exists(path):
                print(f"fetch_windows_mpi: {package}=={VERSION}: download failed: {r.stderr[-400:]}", file=sys.stderr)
                return 1
            got = sha256_of(path)
            if got != digest:
                print(f"fetch_windows_mpi: {wheel}: sha256 {got}, expected {digest}", file=sys.stderr)
                return 1
            prefix = f"{package}-{VERSION}.data/data/Library/"
            with zipfile.ZipFile(path) as z:
                for m in members:
                    dest = os.path.join(out, m)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    with z.open(prefix + m) as src, open(dest, "wb") as dst:
                        dst.write(src.read())
    open(done, "w").close()
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
