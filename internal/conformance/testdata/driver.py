"""One path of the conformance matrix with the Python client of this
repository (clients/python on PYTHONPATH):

    python3 driver.py SERVER_URL API_KEY NAMESPACE PATH PAYLOAD_FILE

PATH is put, redeem, range, direct, tus or release (the client offers
no event stream). The driver checks what it can itself (the bytes it
redeems) and prints the claim's ref JSON as its last line for the test to
check from Go. Exit 0: done; 1: failed, with the reason on stderr.
"""

import sys

from claimcheck import Client


def main() -> None:
    url, key, ns, path, file = sys.argv[1:6]
    with open(file, "rb") as f:
        data = f.read()
    c = Client(url, api_key=key)
    if path in ("put", "redeem", "range", "release"):
        ref = c.put(ns, data, content_type="application/octet-stream")
    elif path == "direct":
        ref = c.upload_file(ns, file, content_type="application/octet-stream")
    elif path == "tus":
        ref = c.upload_resumable(ns, file, content_type="application/octet-stream")
    else:
        raise SystemExit(f"unknown path {path}")
    if path == "range":
        with c.redeem_range(ref, 1000, 5000) as part:
            got = part.read()
        if got != data[1000:6000]:
            raise SystemExit(f"range [1000, 6000): {len(got)} bytes that differ from the payload's")
    else:
        with c.redeem(ref) as p:
            got = p.read()
        if got != data:
            raise SystemExit(f"redeemed {len(got)} bytes that differ from the {len(data)} stored")
    if path == "release":
        c.release(ref)
        info = c.stat(ref)
        if info.releases != 1:
            raise SystemExit(f"after a release the claim has releases={info.releases}")
    print(ref.to_json())


if __name__ == "__main__":
    main()
