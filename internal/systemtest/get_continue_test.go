package systemtest

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/cutbody"
)

// cuttingProxy forwards to the server and, while cut is set, breaks every
// payload answer off after limit bytes. It records the Range headers.
type cuttingProxy struct {
	cut    atomic.Bool
	limit  int64
	mu     sync.Mutex
	ranges []string
}

func (cp *cuttingProxy) start(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	rp.ModifyResponse = func(resp *http.Response) error {
		if cp.cut.Load() && resp.Request.Method == http.MethodGet && resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Request.URL.Path, "/v1/claims/") {
			resp.Body = &cutbody.Body{ReadCloser: resp.Body, Left: cp.limit}
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.mu.Lock()
		if v := r.Header.Get("Range"); v != "" {
			cp.ranges = append(cp.ranges, v)
		}
		cp.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// get --continue: a download cut mid-way leaves a partial file (never
// OUT), which the command resumes by itself (or, with --retries=0, the
// next run does): it fetches only the rest and renames a verified
// whole into place; a partial file that was altered is caught by the
// whole-file check and removed.
func TestGetContinue(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  raw:\n    compression: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	direct := startServer(t, bin, dir, "--config", cfg)
	cp := &cuttingProxy{limit: 1 << 20}
	proxied := "--server=" + cp.start(t, direct)

	data := make([]byte, 3<<20)
	rand.Read(data)
	in := filepath.Join(dir, "in.bin")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"raw", "zipped"} {
		t.Run(ns, func(t *testing.T) {
			refJSON, stderr, code := run(t, bin, nil, "put", proxied, "--ns", ns, in)
			if code != 0 {
				t.Fatalf("put: exit %d: %s", code, stderr)
			}
			refFile := filepath.Join(dir, ns+".ref")
			if err := os.WriteFile(refFile, []byte(refJSON), 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, ns+".out")

			cp.cut.Store(true)
			_, stderr, code = run(t, bin, nil, "get", "--continue", "--retries=0", proxied, "@"+refFile, "-o", out)
			if code == 0 || !strings.Contains(stderr, "run the same command again") {
				t.Fatalf("cut download: exit %d: %s", code, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("a cut download left %s behind (%v)", out, err)
			}
			partials, _ := filepath.Glob(filepath.Join(dir, "."+ns+".out.*.partial"))
			if len(partials) != 1 {
				t.Fatalf("partial files: %v", partials)
			}
			fi, _ := os.Stat(partials[0])
			if fi.Size() == 0 || fi.Size() >= int64(len(data)) {
				t.Fatalf("partial file of %d bytes", fi.Size())
			}
			have, _ := os.ReadFile(partials[0])
			if !bytes.Equal(have, data[:len(have)]) {
				t.Fatal("the partial file is not the payload's beginning")
			}

			cp.cut.Store(false)
			cp.mu.Lock()
			cp.ranges = nil
			cp.mu.Unlock()
			if _, stderr, code := run(t, bin, nil, "get", "--continue", proxied, "@"+refFile, "-o", out); code != 0 {
				t.Fatalf("resumed get: exit %d: %s", code, stderr)
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, data) {
				t.Fatalf("resumed download: %d bytes, not the %d put", len(got), len(data))
			}
			cp.mu.Lock()
			ranges := cp.ranges
			cp.mu.Unlock()
			if want := "bytes=" + itoa(fi.Size()) + "-"; len(ranges) != 1 || ranges[0] != want {
				t.Fatalf("the resumed get asked for %v, want [%s]", ranges, want)
			}
			if _, err := os.Stat(partials[0]); !os.IsNotExist(err) {
				t.Fatal("the partial file is still there after the rename")
			}

			// An altered partial file: the whole-file check refuses it.
			if err := os.Remove(out); err != nil {
				t.Fatal(err)
			}
			cp.cut.Store(true)
			run(t, bin, nil, "get", "--continue", "--retries=0", proxied, "@"+refFile, "-o", out)
			cp.cut.Store(false)
			raw, _ := os.ReadFile(partials[0])
			raw[10] ^= 0xff
			if err := os.WriteFile(partials[0], raw, 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, code = run(t, bin, nil, "get", "--continue", proxied, "@"+refFile, "-o", out)
			if code != 5 || !strings.Contains(stderr, "removed") {
				t.Fatalf("resume onto an altered partial file: exit %d: %s", code, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatal("an unverified file was renamed into place")
			}
			if _, stderr, code := run(t, bin, nil, "get", "--continue", proxied, "@"+refFile, "-o", out); code != 0 {
				t.Fatalf("get after the removal: exit %d: %s", code, stderr)
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
				t.Fatal("the fresh download differs")
			}

			// By itself: every answer is cut after 1 MiB, and one run
			// resumes from its partial file until the whole is there.
			if err := os.Remove(out); err != nil {
				t.Fatal(err)
			}
			cp.cut.Store(true)
			cp.mu.Lock()
			cp.ranges = nil
			cp.mu.Unlock()
			_, stderr, code = run(t, bin, nil, "get", "--continue", proxied, "@"+refFile, "-o", out)
			cp.cut.Store(false)
			if code != 0 || !strings.Contains(stderr, "resuming in") {
				t.Fatalf("get --continue through cut connections: exit %d: %s", code, stderr)
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
				t.Fatal("the download resumed by itself differs")
			}
			cp.mu.Lock()
			ranges = cp.ranges
			cp.mu.Unlock()
			if len(ranges) < 3 || ranges[0] != "bytes=0-" || ranges[1] == ranges[0] {
				t.Fatalf("the self-resuming get asked for %v", ranges)
			}
		})
	}
	if _, stderr, code := run(t, bin, nil, "get", "--continue", proxied, "cc_AAAAAAAAAAAAAAAAAAAAAA"); code != 2 || !strings.Contains(stderr, "--continue") {
		t.Fatalf("--continue without -o: exit %d: %s", code, stderr)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
