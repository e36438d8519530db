package cli_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// claimcheck version says the version (never empty), and the Go version
// and platform it was built with; --json gives the same as an object.
func TestVersion(t *testing.T) {
	out, errOut, code := runMain(t, "version", "--json")
	if code != 0 {
		t.Fatalf("version --json: exit %d: %s", code, errOut)
	}
	var v struct {
		Version, Go, Platform string
		Commit                string
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --json printed %q: %v", out, err)
	}
	if v.Version == "" || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json = %+v, want a version, Go %s on %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	text, _, code := runMain(t, "version")
	if code != 0 || !strings.HasPrefix(text, "claimcheck "+v.Version+"\n") || !strings.Contains(text, runtime.Version()) {
		t.Errorf("version printed %q", text)
	}
	if _, _, code := runMain(t, "version", "extra"); code != 2 {
		t.Errorf("version with an argument: exit %d, want 2", code)
	}
}
