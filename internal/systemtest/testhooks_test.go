package systemtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
)

// testHookStrings are what the engine's test hooks
// (engine/testhooks_claimchecktest.go) put into a binary: the variable
// that sets them and the marker they write.
var testHookStrings = []string{"CLAIMCHECK_TEST_FAILPOINT", "object written, commit held"}

var testBuild struct {
	once sync.Once
	bin  string
	err  error
}

// buildTestBinary is buildBinary with the claimchecktest tag: the binary
// whose test hooks are set from its environment, for the crash tests.
// Every other test runs the binary as released, without them.
func buildTestBinary(t testing.TB) string {
	t.Helper()
	testBuild.once.Do(func() {
		bin := filepath.Join(servetest.BinDir(), "claimcheck-test")
		cmd := exec.Command("go", "build", "-tags", "claimchecktest", "-o", bin, "github.com/claimcheck/claimcheck/cmd/claimcheck")
		if out, err := cmd.CombinedOutput(); err != nil {
			testBuild.err = fmt.Errorf("go build -tags claimchecktest: %v\n%s", err, out)
			return
		}
		testBuild.bin = bin
	})
	if testBuild.err != nil {
		t.Fatal(testBuild.err)
	}
	return testBuild.bin
}

// The binary built as scripts/release.sh builds it holds no test hook:
// neither their code nor the names of the variables that set them. The
// test binary, which has them, shows that the check would see them.
func TestReleaseBinaryHasNoTestHooks(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "claimcheck")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=auto", "-ldflags", "-s -w -buildid=", "-o", bin, "github.com/claimcheck/claimcheck/cmd/claimcheck")
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release build: %v\n%s", err, out)
	}
	check := func(path string, want bool) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range testHookStrings {
			if bytes.Contains(data, []byte(s)) != want {
				t.Errorf("%s: holds %q: %v, want %v", filepath.Base(path), s, !want, want)
			}
		}
	}
	check(bin, false)
	check(buildTestBinary(t), true)
}
