package cli_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestConsoleSwitch: serve answers the operator console at /console/ by
// default, with its Content-Security-Policy, beside the API, and
// console.disabled takes it away (404, as any unknown path) and leaves
// the API as it was.
func TestConsoleSwitch(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		logs := serveInProcess(t, "")
		api := apiLine.FindStringSubmatch(logs.String())[1]
		resp, err := http.Get(api + "/console/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET /console/: %s, CSP %q", resp.Status, resp.Header.Get("Content-Security-Policy"))
		}
		if code, _ := status(t, api+"/v1/namespaces"); code != http.StatusOK {
			t.Fatalf("GET /v1/namespaces beside the console: %d", code)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		logs := serveInProcess(t, "console: { disabled: true }\n")
		api := apiLine.FindStringSubmatch(logs.String())[1]
		for _, path := range []string{"/console/", "/console/app.js", "/console"} {
			if code, _ := status(t, api+path); code != http.StatusNotFound {
				t.Errorf("GET %s with console.disabled: %d, want 404", path, code)
			}
		}
		if code, _ := status(t, api+"/v1/namespaces"); code != http.StatusOK {
			t.Fatalf("GET /v1/namespaces: %d", code)
		}
	})
}
