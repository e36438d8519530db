package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/cli"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// TestUploadCommand runs `claimcheck upload` in-process against a real
// server and store: init, PUT and confirm, and the ref it prints redeems
// to the file's bytes.
func TestUploadCommand(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{Data: dir, Sweeper: sweep.Config{Disabled: true}, Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	defer srv.Close()

	data := make([]byte, 3<<20)
	rand.Read(data)
	file := filepath.Join(dir, "payload.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	upload := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := cli.Main(ctx, append([]string{"upload", "--server", srv.URL}, args...), cli.Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		})
		return out.String(), errb.String(), code
	}
	out, errs, code := upload("--ns", "media", "--content-type", "video/mp4", "--idempotency-key", "job-1", file)
	if code != cli.ExitOK {
		t.Fatalf("upload exited %d: %s", code, errs)
	}
	ref, err := claimcheck.ParseRef([]byte(out))
	if err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	p, err := store.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) || p.ContentType != "video/mp4" {
		t.Fatalf("redeem: %v (content type %q)", err, p.ContentType)
	}
	// The same key again: the same claim, nothing uploaded twice.
	again, errs, code := upload("--ns", "media", "--idempotency-key", "job-1", file)
	if code != cli.ExitOK || again != out {
		t.Errorf("repeated upload: exit %d, %q (%s); want %q", code, again, errs, out)
	}
	if _, errs, code := upload("--ns", "media", "-"); code != cli.ExitUsage {
		t.Errorf("upload of stdin: exit %d (%s), want usage", code, errs)
	}
	if _, errs, code := upload(file); code != cli.ExitUsage || !strings.Contains(errs, "--ns") {
		t.Errorf("upload without --ns: exit %d (%s)", code, errs)
	}
}
