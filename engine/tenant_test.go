package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"

	"gopkg.in/yaml.v3"
)

func TestTenantConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		wantTenant          map[string]string // namespace → tenant
	}{
		{name: "default tenant", yaml: "namespaces: {a: {}}", wantTenant: map[string]string{"a": claimcheck.DefaultTenant}},
		{name: "declared", yaml: "tenants: {acme: {quota: {bytes: 1GiB}}}\nnamespaces: {a: {tenant: acme}, b: {}}",
			wantTenant: map[string]string{"a": "acme", "b": claimcheck.DefaultTenant}},
		{name: "defaults name the tenant", yaml: "tenants: {acme: {}}\ndefaults: {tenant: acme}\nnamespaces: {a: {}}",
			wantTenant: map[string]string{"a": "acme"}},
		{name: "undeclared", yaml: "namespaces: {a: {tenant: acme}}", wantErr: `namespaces.a: tenant "acme" is not declared`},
		{name: "bad name", yaml: "tenants: {Acme: {}}", wantErr: `tenant "Acme": use lowercase`},
		{name: "negative quota", yaml: "tenants: {acme: {quota: {claims: -1}}}", wantErr: "tenants.acme.quota.claims: must not be negative (got -1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			if err := yaml.Unmarshal([]byte(tc.yaml), &c); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, claimcheck.ErrInvalidArgument) {
					t.Fatalf("Validate = %v, want an invalid argument containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pols, _, err := c.Policies()
			if err != nil {
				t.Fatal(err)
			}
			for ns, want := range tc.wantTenant {
				if got := pols[ns].Tenant; got != want {
					t.Errorf("namespace %s: tenant %q, want %q", ns, got, want)
				}
			}
		})
	}
}
