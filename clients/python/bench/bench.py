"""Put + redeem of one large payload with the Python client and with the Go
client (the claimcheck CLI) on the same server, interleaved; MB/s and the
peak memory (max RSS) of each client process.

    cd clients/python && python3 bench/bench.py [--mb 100] [--rounds 3]

With --small, the Python client's small calls instead, with its connections
kept and reused (the default) against one connection per request
(pool_size=0), interleaved round by round in one process: a put of 1 KiB of
fresh bytes, a stat and a redeem (get_bytes) of a 1 KiB claim; the median
milliseconds per call and their ratio.

    cd clients/python && python3 bench/bench.py --small [--rounds 2000]

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

from claimcheck import Client  # noqa: E402
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


def small(rounds: int) -> None:
    """Small puts, stats and redeems, pooled against unpooled."""
    srv = Server()
    # A key per client: the server's rate limit counts per key.
    clients = {"kept": Client(srv.url, api_key=srv.keys["admin"]),
               "per request": Client(srv.url, api_key=srv.create_key("admin"), pool_size=0)}
    times: dict[tuple[str, str], list[float]] = {}
    try:
        ref = clients["kept"].put("orders", os.urandom(1024))
        order = list(clients)
        for i in range(rounds):
            order.reverse()  # each goes first every other round
            for name in order:
                c = clients[name]
                body = i.to_bytes(8, "big") + os.urandom(1016)
                for op, call in (("put 1 KiB", lambda: c.put("orders", body)),
                                 ("stat", lambda: c.stat(ref)),
                                 ("redeem 1 KiB", lambda: c.get_bytes(ref))):
                    start = time.perf_counter()
                    call()
                    times.setdefault((op, name), []).append(time.perf_counter() - start)
    finally:
        for c in clients.values():
            c.close()
        srv.stop()
    print(f"{rounds} rounds, median ms per call; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| call | kept connections | a connection per request | ratio |")
    print("|---|---|---|---|")
    for op in ("put 1 KiB", "stat", "redeem 1 KiB"):
        kept, fresh = (statistics.median(times[(op, n)]) * 1000 for n in ("kept", "per request"))
        print(f"| {op} | {kept:.3f} | {fresh:.3f} | {fresh / kept:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--small", action="store_true", help="small calls, connections kept against not")
    opts = ap.parse_args()
    if opts.small:
        small(opts.rounds or 2000)
        return
    opts.rounds = opts.rounds or 3
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
