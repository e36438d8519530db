package client_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// TestNamespaceUsageOverTheWire: GET /v1/namespaces/{ns} and GET
// /v1/namespaces answer the policy, the limits and the usage the store
// counts, through the Go client.
func TestNamespaceUsageOverTheWire(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "raw", bytes.Repeat([]byte("a"), 1000), claimcheck.PutOptions{})
	gone := b.put(t, "raw", bytes.Repeat([]byte("b"), 500), claimcheck.PutOptions{})
	b.put(t, "other", []byte("hello"), claimcheck.PutOptions{})
	if err := b.client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}

	info, err := b.client.Namespace(ctx, "raw")
	if err != nil {
		t.Fatalf("Namespace(raw): %v", err)
	}
	want := claimcheck.NamespaceUsage{UsedBytes: 1000, ActiveClaims: 1, FinishedClaims: 1} // the deleted claim finished
	if info.Name != "raw" || info.Usage != want || info.Policy.Compression != claimcheck.CompressionNone {
		t.Errorf("Namespace(raw) = %+v, want usage %+v and the raw policy", info, want)
	}
	if pol, err := b.client.Policy(ctx, "raw"); err != nil || pol.Compression != claimcheck.CompressionNone {
		t.Errorf("Policy(raw) still reads the same answer: %+v, %v", pol, err)
	}

	list, err := b.client.Namespaces(ctx)
	if err != nil {
		t.Fatalf("Namespaces: %v", err)
	}
	got := map[string]claimcheck.NamespaceUsage{}
	var names []string
	for _, n := range list {
		got[n.Name] = n.Usage
		names = append(names, n.Name)
	}
	// Configured namespaces are listed even before their first claim;
	// "other" runs on the defaults and is listed because it holds one.
	for _, name := range []string{"other", "raw", "short", "small"} {
		if _, ok := got[name]; !ok {
			t.Errorf("Namespaces = %v, missing %s", names, name)
		}
	}
	if got["other"] != (claimcheck.NamespaceUsage{UsedBytes: 5, ActiveClaims: 1}) {
		t.Errorf("usage of other = %+v", got["other"])
	}

	_, err = b.client.Namespace(ctx, "Bad Name")
	if !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("Namespace(bad name) = %v, want invalid argument", err)
	}
}
