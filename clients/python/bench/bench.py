"""Put + redeem of one large payload with the Python client and with the Go
client (the claimcheck CLI) on the same server, interleaved; MB/s and the
peak memory (max RSS) of each client process.

    cd clients/python && python3 bench/bench.py [--mb 100] [--rounds 3]

Starts its own `claimcheck serve` (tests/harness.py: a temporary data
directory on 127.0.0.1, auth on; CLAIMCHECK_TEST_BIN or a fresh go build) and
uses the namespace `raw` (compression none), so that both clients are
measured on transport and verification rather than on the server's zstd.
Each put sends different bytes (a counter at the start), so no put is a
dedup hit. Times are wall clock of the whole client process, start-up
included.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.harness import Server  # noqa: E402

PY_PUT = """
import sys
from claimcheck import Client
c = Client(sys.argv[1], api_key=sys.argv[2])
with open(sys.argv[3], "rb") as f:
    print(c.put("raw", f).to_json())
"""

PY_GET = """
import sys
from claimcheck import Client
c = Client(sys.argv[1], api_key=sys.argv[2])
with c.redeem(sys.argv[3]) as p, open(sys.argv[4], "wb") as out:
    p.copy_to(out)
"""


def run(args: list[str], env: dict[str, str]) -> tuple[float, int, bytes]:
    """Runs a client process; returns its wall time, its max RSS (KiB) and its output."""
    start = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = p.stdout.read() if p.stdout else b""
    err = p.stderr.read() if p.stderr else b""
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{args[:3]}: exit {p.returncode}: {err.decode()}")
    return elapsed, usage.ru_maxrss, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    size = opts.mb * 1000 * 1000

    srv = Server()
    key = srv.keys["admin"]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    results: dict[str, list[tuple[float, int]]] = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "payload"), os.path.join(d, "copy")
            with open(src, "wb") as f:
                for _ in range(size // (1 << 20)):
                    f.write(os.urandom(1 << 20))
                f.write(os.urandom(size % (1 << 20)))
            counter = 0

            def fresh() -> None:
                nonlocal counter
                counter += 1
                with open(src, "r+b") as f:
                    f.write(counter.to_bytes(8, "big"))

            for _ in range(opts.rounds):
                fresh()
                t, rss, out = run([sys.executable, "-c", PY_PUT, srv.url, key, src], env)
                results.setdefault("python put", []).append((t, rss))
                ref = out.decode().strip()
                t, rss, _ = run([sys.executable, "-c", PY_GET, srv.url, key, ref, dst], env)
                results.setdefault("python redeem", []).append((t, rss))
                assert os.path.getsize(dst) == size

                fresh()
                t, rss, out = run([srv.bin, "put", "--ns", "raw", "--server", srv.url, "--api-key", key, src], env)
                results.setdefault("go put", []).append((t, rss))
                ref = out.decode().strip()
                t, rss, _ = run([srv.bin, "get", ref, "-o", dst, "--server", srv.url, "--api-key", key], env)
                results.setdefault("go redeem", []).append((t, rss))
                assert os.path.getsize(dst) == size
    finally:
        srv.stop()

    print(f"{opts.mb} MB, {opts.rounds} rounds, median (min-max)")
    print("| client, operation | MB/s | peak RSS of the client process |")
    print("|---|---|---|")
    for name, rs in results.items():
        rates = [opts.mb / t for t, _ in rs]
        rss = max(r for _, r in rs)
        print(f"| {name} | {statistics.median(rates):.0f} ({min(rates):.0f}-{max(rates):.0f}) | {rss / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
