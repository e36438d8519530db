package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// Encryption at rest and crypto-shredding over the wire.
func TestEncryptedNamespaceOverHTTP(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := engine.Open(ctx, engine.Config{
		Data: dir, Clock: clock.NewFake(t0),
		MasterKey:  base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)),
		Namespaces: map[string]claimcheck.Policy{"vault": {Encryption: claimcheck.EncryptionAES256GCM}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	data := jsonDoc(300 << 10)
	ref, err := c.Put(ctx, "vault", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Policy(ctx, "vault"); err != nil || p.Encryption != claimcheck.EncryptionAES256GCM {
		t.Fatalf("policy over HTTP: %+v, %v", p, err)
	}
	p, err := c.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem: %v", err)
	}

	// Without the confirmation the server refuses.
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/namespaces/vault/key", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("destroy without confirm: %d, want 400", resp.StatusCode)
	}

	if err := c.DestroyNamespaceKey(ctx, "vault"); err != nil {
		t.Fatalf("DestroyNamespaceKey: %v", err)
	}
	_, err = c.Redeem(ctx, ref)
	var gone *claimcheck.GoneError
	if !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonKeyDestroyed {
		t.Fatalf("redeem after shredding: %v, want gone (key_destroyed)", err)
	}
	if err := c.DestroyNamespaceKey(ctx, "vault"); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Fatalf("second destroy: %v, want not found", err)
	}
}
