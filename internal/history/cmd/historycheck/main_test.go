package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const put = `{"seq":1,"op":"put","phase":"invoke","time":"2026-01-01T00:00:00Z","ns":"ns","size":1}
{"seq":2,"of":1,"op":"put","phase":"ok","time":"2026-01-01T00:00:01Z","ns":"ns","id":"c1","digest":"sha256:aa","size":1,"expires_at":"2026-01-01T01:00:00Z"}
{"seq":3,"op":"redeem","phase":"invoke","time":"2026-01-01T00:00:02Z","ns":"ns","id":"c1"}
`
	good := write("good.jsonl", put+`{"seq":4,"of":3,"op":"redeem","phase":"ok","time":"2026-01-01T00:00:03Z","ns":"ns","id":"c1","digest":"sha256:aa"}`+"\n")
	lost := write("lost.jsonl", put+`{"seq":4,"of":3,"op":"redeem","phase":"fail","time":"2026-01-01T00:00:03Z","ns":"ns","id":"c1","error":"gone"}`+"\n")
	broken := write("broken.jsonl", "{nope\n")
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{good}, 0, "violations: 0"},
		{[]string{lost}, 1, "lost: event 4, claim c1"},
		{[]string{broken}, 2, "line 1"},
		{nil, 2, "usage"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("run %v = %d\n%s%s; want %d and %q", tc.args, code, &stdout, &stderr, tc.code, tc.out)
		}
	}
}
