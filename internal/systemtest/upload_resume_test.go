package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/cutbody"
)

// tusProxy forwards to the server and breaks uploads the way networks
// and machines do: it drops the client's connection once in the middle
// of a PATCH body (dropAfter bytes into it), and it runs kill when a
// PATCH has carried the upload to offset killAt (to kill the client
// there); the reverse proxy then aborts both connections, so the server
// sees a short body and the client a connection closed without an
// answer. It records each request as "METHOD Upload-Offset".
type tusProxy struct {
	mu        sync.Mutex
	dropAfter int64 // 0: no drop (set again to drop once more)
	killAt    int64 // 0: none
	kill      func()
	log       []string
}

func (tp *tusProxy) start(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) {
		// No answer at all: the client sees its connection closed.
		panic(http.ErrAbortHandler)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp.mu.Lock()
		tp.log = append(tp.log, r.Method+" "+r.Header.Get("Upload-Offset"))
		if r.Method == http.MethodPatch {
			off, _ := strconv.ParseInt(r.Header.Get("Upload-Offset"), 10, 64)
			switch {
			case tp.dropAfter > 0:
				r.Body = &cutbody.Body{ReadCloser: r.Body, Left: tp.dropAfter}
				tp.dropAfter = 0
			case off < tp.killAt && tp.killAt < off+r.ContentLength:
				r.Body = &cutbody.Body{ReadCloser: r.Body, Left: tp.killAt - off, OnCut: tp.kill}
				tp.killAt = 0
			}
		}
		tp.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// runKilled runs cmd with the proxy armed to drop the connection
// dropAfter bytes into the next PATCH (0: not) and to kill cmd when the
// upload reaches killAt, and returns cmd's end. The process reaches the
// proxy's goroutine through an atomic.
func (tp *tusProxy) runKilled(t *testing.T, cmd *exec.Cmd, dropAfter, killAt int64) error {
	var proc atomic.Pointer[os.Process]
	tp.arm(dropAfter, killAt, func() {
		if p := proc.Load(); p != nil {
			_ = p.Kill() // it may have ended already
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc.Store(cmd.Process)
	return cmd.Wait()
}

// arm sets the next drop and kill (zero: none).
func (tp *tusProxy) arm(dropAfter, killAt int64, kill func()) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.dropAfter, tp.killAt, tp.kill = dropAfter, killAt, kill
}

func (tp *tusProxy) takeLog() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	l := tp.log
	tp.log = nil
	return l
}

// upload --resume: a connection dropped mid-chunk is resumed within the
// run; a run killed mid-way leaves its state file, and the next run
// continues from the server's offset (no new upload, no byte of the
// first chunks sent again) and prints the reference. The redeemed bytes
// are the file's, and the namespace holds one claim of exactly its size.
func TestUploadResume(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  raw:\n    compression: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	direct := startServer(t, bin, dir, "--config", cfg)
	tp := &tusProxy{}
	proxied := "--server=" + tp.start(t, direct)
	cache := filepath.Join(dir, "cache")
	env := []string{"XDG_CACHE_HOME=" + cache, "HOME=" + dir}
	states := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "claimcheck", "uploads", "*.json"))
		return m
	}

	const chunk = client.DefaultChunkSize
	data := make([]byte, chunk+chunk/2)
	rand.Read(data)
	in := filepath.Join(dir, "in.bin")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// Run 1: dropped once 3 MiB into the first chunk (the client goes on
	// by itself), then killed 4 MiB into the second.
	cmd := exec.Command(bin, "upload", "--resume", proxied, "--ns", "raw", in)
	cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER=", "CLAIMCHECK_API_KEY="), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := tp.runKilled(t, cmd, 3<<20, chunk+4<<20); err == nil {
		t.Fatalf("the killed upload succeeded: %s", stdout.String())
	}
	first := tp.takeLog()
	if len(states()) != 1 {
		t.Fatalf("state files after the kill: %v (log %v)", states(), first)
	}
	if first[0] != "POST " || first[len(first)-1] != "PATCH "+itoa(chunk) {
		t.Fatalf("run 1 sent %v: want a POST first and the kill in the PATCH from %d", first, chunk)
	}
	if first[1] != "PATCH 0" || first[2] != "HEAD " || !strings.HasPrefix(first[3], "PATCH ") {
		t.Fatalf("run 1 sent %v: want the drop in the first PATCH answered by a HEAD", first)
	}

	out, errText, code := runEnv(t, bin, env, nil, "upload", "--resume", proxied, "--ns", "raw", in)
	if code != 0 {
		t.Fatalf("resumed upload: exit %d: %s", code, errText)
	}
	second := tp.takeLog()
	if second[0] != "HEAD " || slices.Contains(second, "POST ") || !strings.HasPrefix(second[1], "PATCH ") {
		t.Fatalf("run 2 sent %v: want it to ask for the offset and continue, without a new upload", second)
	}
	for _, r := range second {
		if off, ok := strings.CutPrefix(r, "PATCH "); ok && atoi(off) < chunk {
			t.Fatalf("run 2 sent %v: the first chunk (up to %d) was complete before the kill", second, chunk)
		}
	}
	if len(states()) != 0 {
		t.Fatalf("state files after the success: %v", states())
	}
	ref, err := claimcheck.ParseRef([]byte(strings.TrimSpace(out)))
	if err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if ref.Size != int64(len(data)) || ref.Namespace != "raw" {
		t.Fatalf("ref %+v", ref)
	}
	got := filepath.Join(dir, "out.bin")
	if _, errText, code := run(t, bin, nil, "get", "--server="+direct, strings.TrimSpace(out), "-o", got); code != 0 {
		t.Fatalf("get: exit %d: %s", code, errText)
	}
	if b, _ := os.ReadFile(got); !bytes.Equal(b, data) {
		t.Fatalf("redeemed %d bytes, not the %d uploaded", len(b), len(data))
	}
	c, err := client.New(direct)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Namespace(context.Background(), "raw")
	if err != nil {
		t.Fatal(err)
	}
	if want := (claimcheck.NamespaceUsage{UsedBytes: int64(len(data)), ActiveClaims: 1}); info.Usage != want {
		t.Fatalf("namespace usage %+v, want %+v: one claim, quota exact", info.Usage, want)
	}

	// A run killed after the state was saved, then the file changes: the
	// next run must not continue the old upload (other bytes) but start
	// a new one.
	t.Run("a changed file starts over", func(t *testing.T) {
		cmd := exec.Command(bin, "upload", "--resume", proxied, "--ns", "raw", in)
		cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER="), env...)
		_ = tp.runKilled(t, cmd, 0, 1<<20) // killed on purpose; what counts is the state it leaves
		tp.takeLog()
		if len(states()) != 1 {
			t.Fatalf("state files: %v", states())
		}
		changed := append([]byte("x"), data[1:]...)
		if err := os.WriteFile(in, changed, 0o600); err != nil {
			t.Fatal(err)
		}
		out, errText, code := runEnv(t, bin, env, nil, "upload", "--resume", proxied, "--ns", "raw", in)
		if code != 0 {
			t.Fatalf("upload of the changed file: exit %d: %s", code, errText)
		}
		if l := tp.takeLog(); l[0] != "POST " {
			t.Fatalf("the changed file's upload sent %v, want a new upload first", l)
		}
		var ref claimcheck.Ref
		if err := json.Unmarshal([]byte(out), &ref); err != nil {
			t.Fatalf("ref %s: %v", out, err)
		}
		if ref.Digest == "" || ref.Size != int64(len(changed)) {
			t.Fatalf("ref %s", out)
		}
	})

	t.Run("bad input names the flag", func(t *testing.T) {
		for _, tc := range []struct{ args []string }{
			{[]string{"--label", "a=b"}},
			{[]string{"--consumers", "2"}},
			{[]string{"--idempotency-key", "k"}},
		} {
			args := append([]string{"upload", "--resume", proxied, "--ns", "raw", in}, tc.args...)
			_, errText, code := runEnv(t, bin, env, nil, args...)
			if code != 2 || !strings.Contains(errText, tc.args[0]+" cannot be used with --resume") {
				t.Errorf("%v: exit %d: %s", tc.args, code, errText)
			}
		}
	})
}
