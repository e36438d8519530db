package systemtest

import (
	"context"
	"io"

	"errors"
	"fmt"
	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// otherClients redeems claims with the Python and JavaScript clients
// (clients/python, clients/js), each redeem in a process of its own, for
// the damage chaos test: a short script per client opens the claim (whole,
// or a range with the Python client; the JavaScript client has no ranged
// redeem), writes the bytes to a file and exits 0, or exits 5 when the
// client raised its checksum-mismatch error. Anything else is a failure
// of the client. A client whose runtime is missing is skipped, saying
// why (the JavaScript client needs `npm ci` in clients/js, which
// scripts/js-test.sh runs).
type otherClients struct {
	py, js []string // command and script; nil: skipped
	pyPath string   // the Python client's source directory, for PYTHONPATH
}

const chaosPython = `import sys
from claimcheck import ChecksumMismatch, Client
url, cid, out, off, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
c = Client(url)
try:
    with (c.redeem(cid) if n < 0 else c.redeem_range(cid, off, n)) as p:
        data = p.read()
except ChecksumMismatch as e:
    print(e, file=sys.stderr)
    sys.exit(5)
with open(out, "wb") as f:
    f.write(data)
`

const chaosJS = `import { writeFileSync } from 'node:fs';
const [client, url, id, out] = process.argv.slice(2);
const { Client, ChecksumMismatchError } = await import(client);
try {
  const p = await new Client(url).redeem(id);
  writeFileSync(out, await p.bytes());
} catch (e) {
  console.error(String(e));
  // Node's fetch sends no TE: trailers, so the server answers with a
  // Content-Length and cuts the connection when the payload fails its
  // check (ADR 0255): the body ends early ("terminated"). Nothing else
  // cuts connections in this run, so a cut is the server's refusal.
  const cut = e instanceof TypeError && String(e.message).includes('terminated');
  process.exit(e instanceof ChecksumMismatchError || cut ? 5 : 1);
}
`

func newOtherClients(t *testing.T) *otherClients {
	t.Helper()
	dir := t.TempDir()
	o := &otherClients{}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if py, err := exec.LookPath("python3"); err != nil {
		t.Log("damage chaos: python3 not found; the Python client's redeems are skipped")
	} else {
		script := filepath.Join(dir, "redeem.py")
		if err := os.WriteFile(script, []byte(chaosPython), 0o600); err != nil {
			t.Fatal(err)
		}
		o.py = []string{py, script}
		o.pyPath = filepath.Join(root, "clients", "python")
	}
	switch node, err := exec.LookPath("node"); {
	case err != nil:
		t.Log("damage chaos: node not found; the JavaScript client's redeems are skipped")
	case !exists(filepath.Join(root, "clients", "js", "node_modules")):
		t.Log("damage chaos: clients/js/node_modules missing (npm ci in clients/js; scripts/js-test.sh runs it); the JavaScript client's redeems are skipped")
	default:
		script := filepath.Join(dir, "redeem.mjs")
		if err := os.WriteFile(script, []byte(chaosJS), 0o600); err != nil {
			t.Fatal(err)
		}
		src := (&url.URL{Scheme: "file", Path: filepath.Join(root, "clients", "js", "src", "node.js")}).String()
		o.js = []string{node, script, src}
	}
	return o
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// errMismatch is a client's checksum-mismatch error (exit 5).
var errMismatch = errors.New("checksum mismatch")

// redeemPython redeems claim id whole (n < 0) or bytes [off, off+n) with
// the Python client into out.
func (o *otherClients) redeemPython(server, id string, off, n int, out string) error {
	cmd := exec.Command(o.py[0], o.py[1], server, id, out, strconv.Itoa(off), strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+o.pyPath, "PYTHONDONTWRITEBYTECODE=1")
	return clientResult("python", cmd)
}

// redeemJS redeems claim id whole with the JavaScript client into out.
func (o *otherClients) redeemJS(server, id, out string) error {
	return clientResult("js", exec.Command(o.js[0], o.js[1], o.js[2], server, id, out))
}

func clientResult(name string, cmd *exec.Cmd) error {
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 5:
		return errMismatch
	default:
		return fmt.Errorf("%s client: %v: %s", name, err, msg)
	}
}

// redeemRangeBytes reads bytes [off, off+n) of a claim with the Go
// client's ranged redeem.
func redeemRangeBytes(c *client.Client, ref claimcheck.Ref, off, n int64) ([]byte, error) {
	p, err := c.RedeemRange(context.Background(), ref, off, n)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.Close() }()
	return io.ReadAll(p)
}
