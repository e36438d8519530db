package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// backend is one kind of storage: its name and how to get a storage URL
// of the test's own (empty: the embedded default, files under --data).
type backend struct {
	name string
	env  string // the variable that says the service runs; "" for files
	// storage returns the server's storage URL.
	storage func(t *testing.T) string
}

// backends are the matrix's storage backends. MinIO gets a fresh bucket
// (testsvc.S3); the emulators' shared bucket and container get a prefix
// of the test's own, so this server owns only its part of them.
func backends() []backend {
	return []backend{
		{name: "files", storage: func(*testing.T) string { return "" }},
		{name: "s3 (MinIO)", env: "TEST_S3_URL", storage: func(t *testing.T) string {
			u, _, _ := testsvc.S3(t)
			return u
		}},
		{name: "gs (fake-gcs-server)", env: "TEST_GCS_URL", storage: func(t *testing.T) string {
			return withPrefix(testsvc.GCSURL(t))
		}},
		{name: "azblob (Azurite)", env: "TEST_AZURE_URL", storage: func(t *testing.T) string {
			return withPrefix(testsvc.AzureURL(t))
		}},
	}
}

func withPrefix(u string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "prefix=conformance-" + strings.ToLower(rand.Text())[:12] + "/"
}

// target is one running server every client of a backend's row uses,
// with a tenant-wide admin key (the event stream needs one; it may do
// every other path too).
type target struct {
	backend string
	url     string
	key     string
	dir     string // scratch space: payload files, CLI state
	srv     *servetest.Server
	cc      *client.Client // the test's own view, to check what a client did
}

// startTarget starts the backend's server, or says why it cannot.
// The put path's namespaces keep their payloads inline (ADR 0292), so
// that every client's put shows it sends the length that puts a payload
// there; the other paths store objects in the backend.
func startTarget(t *testing.T, bin string, b backend, clients []string) (*target, string) {
	t.Helper()
	if b.env != "" && os.Getenv(b.env) == "" {
		return nil, b.env + " is not set (scripts/test.sh starts the service and sets it)"
	}
	dir := t.TempDir()
	cfg := "auth: true\nlifecycle: off\nbucket_cors: off\n"
	if s := b.storage(t); s != "" {
		cfg += fmt.Sprintf("storage: %q\n", s)
	}
	cfg += "namespaces:\n"
	declared := map[string]bool{}
	for _, c := range clients {
		// Stored as they are: stat names the object of a payload in the
		// bucket, and none of an inline one (check). The JavaScript
		// client's two drivers share a namespace.
		if ns := namespace(c, "put"); !declared[ns] {
			declared[ns] = true
			cfg += fmt.Sprintf("  %s: { inline_below: 1MiB, compression: none }\n", ns)
		}
	}
	cfgPath := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	r := servetest.Run(t, bin, dir, "keys", "create", "--config", cfgPath, "--data", data, "--role", "admin")
	if r.Code != 0 {
		t.Fatalf("%s: keys create: exit %d: %s", b.name, r.Code, r.Stderr)
	}
	key := strings.TrimSpace(r.Stdout)
	srv := servetest.Start(t, bin, dir, "--config", cfgPath, "--data", data)
	if srv.URL == "" {
		t.Fatalf("%s: serve refused to start:\n%s", b.name, srv.Logs())
	}
	cc, err := client.New(srv.URL, client.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return &target{backend: b.name, url: srv.URL, key: key, dir: dir, srv: srv, cc: cc}, ""
}

// stop ends the server now, so that the next backend's does not run
// beside it; it must exit 0.
func (tg *target) stop(t *testing.T) {
	t.Helper()
	if code := tg.srv.Stop(t); code != 0 {
		t.Errorf("%s: serve exited %d:\n%s", tg.backend, code, tg.srv.Logs())
	}
}

// payloadSize is large enough for several blocks of every store and
// small enough that the matrix stays quick.
const payloadSize = 100_000

// payload is the bytes of one cell: different for every client, backend
// and path, so that dedup never answers a put with another cell's blob.
func payload(seed string) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < payloadSize; i++ {
		s := sha256.Sum256(fmt.Appendf(nil, "%s/%d", seed, i))
		b.Write(s[:])
	}
	return b.Bytes()[:payloadSize]
}

// namespace is the cell's own namespace (at most 24 characters): its
// event stream then carries only the cell's events.
func namespace(client, path string) string {
	ns := strings.ToLower(client)
	if i := strings.IndexAny(ns, " ("); i > 0 {
		ns = ns[:i]
	}
	return ns + "-" + path
}

// writePayload puts the cell's payload in a file for a client that reads
// one, and returns its bytes and path.
func (tg *target) writePayload(client, path string) ([]byte, string, error) {
	data := payload(client + "/" + tg.backend + "/" + path)
	f := filepath.Join(tg.dir, strings.NewReplacer(" ", "_", "/", "_", "(", "", ")", "").Replace(client+"-"+path+".bin"))
	return data, f, os.WriteFile(f, data, 0o600)
}

// checkRef checks from Go what a client stored: the claim redeems to
// want and, after the release path, counts one release.
func (tg *target) checkRef(ctx context.Context, refJSON []byte, want []byte, path string) outcome {
	ref, err := claimcheck.ParseRef(bytes.TrimSpace(lastLine(refJSON)))
	if err != nil {
		return fail("the client's ref %q: %v", lastLine(refJSON), err)
	}
	return tg.check(ctx, ref, want, path)
}

func (tg *target) check(ctx context.Context, ref claimcheck.Ref, want []byte, path string) outcome {
	if path == "release" {
		info, err := tg.cc.Stat(ctx, ref)
		if err != nil {
			return failErr(err)
		}
		if info.Releases != 1 {
			return fail("after the release %s has releases=%d, want 1", ref.ID, info.Releases)
		}
		return pass()
	}
	if path == "put" {
		info, err := tg.cc.Stat(ctx, ref)
		if err != nil {
			return failErr(err)
		}
		if info.Object != "" {
			return fail("the put of %d bytes went to the bucket (%s), not inline: did the client send its length?", len(want), info.Object)
		}
	}
	p, err := tg.cc.Redeem(ctx, ref)
	if err != nil {
		return fail("redeem from Go: %v", err)
	}
	defer p.Close()
	got, err := io.ReadAll(p)
	if err != nil {
		return fail("redeem from Go: %v", err)
	}
	if !bytes.Equal(got, want) {
		return fail("redeemed from Go %d bytes that differ from the %d the client stored", len(got), len(want))
	}
	return pass()
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}
