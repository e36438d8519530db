package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/config"
)

// FuzzServeConfig feeds the whole file `serve --config` reads (the store's
// config plus the server's own keys) and CLAIMCHECK_* overrides through
// the loader and the store's validation: no panic; a file that decodes
// and validates names only valid namespaces; validation errors are
// ErrInvalidArgument.
func FuzzServeConfig(f *testing.F) {
	f.Add([]byte("listen: 127.0.0.1:8080\ndata: ./data\nevents: {retention: 720h}\nnamespaces: {orders: {ttl: {max_age: 24h}}}\n"), "CLAIMCHECK_DEFAULTS__THRESHOLD=2MiB")
	f.Add([]byte("defaults: false\nnamespaces: {a: {}}\n"), "CLAIMCHECK_EVENTS__RETENTION=-1s")
	f.Add([]byte("history: {retention: 168h}\n"), "CLAIMCHECK_HISTORY__RETENTION=-1s")
	f.Add([]byte("tenants: {acme: {quota: {bytes: 1TiB}}}\nnamespaces: {v: {tenant: acme}}\n"), "")
	f.Add([]byte("namespaces: {\"../x\": {}}\n"), "CLAIMCHECK_SWEEPER__PAGE_SIZE=-1")
	f.Add([]byte("{"), "CLAIMCHECK_=x")
	f.Add([]byte("defaults:\n  treshold: 1MiB\n  ttl: {max_agee: 1h, delete_afer_read: true}\n"), "")
	f.Add([]byte("defaults: {uploads: {confirm_witin: 1h}, quota: {byte: 1}}\n"), "")
	f.Add([]byte("defaults: {ttl: {max_age: 0}}\n"), "CLAIMCHECK_DEFAULTS__QUOTA__BYTES=-1")
	f.Add([]byte("http: {max_conns_per_addr: 5, max_pending_bytes_per_key: 1MiB}\n"), "CLAIMCHECK_HTTP__MAX_CONNS_PER_ADDR=x")
	f.Add([]byte("namespaces: {a: {digest_first: false}}\n"), "CLAIMCHECK_LISTN=x")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		var fc fileConfig
		if err := config.Decode(data, strings.Split(env, "\n"), &fc); err != nil {
			return
		}
		if err := fc.Config.Validate(); err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("validation error %v is not ErrInvalidArgument", err)
			}
			return
		}
		for name := range fc.Namespaces {
			if claimcheck.ValidateNamespace(name) != nil {
				t.Fatalf("config with namespace %q validated", name)
			}
		}
	})
}
