package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// Master key rotation over the wire: POST /v1/namespaces/{ns}/key/rewrap.
func TestRewrapOverHTTP(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	oldKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	newKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))
	open := func(master string, prev ...string) *engine.Store {
		s, err := engine.Open(ctx, engine.Config{
			Data: dir, Clock: clock.NewFake(t0), MasterKey: master, PreviousMasterKeys: prev,
			Namespaces: map[string]claimcheck.Policy{"vault": {Encryption: claimcheck.EncryptionAES256GCM}, "plain": {}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(oldKey)
	data := jsonDoc(100 << 10)
	ref, err := s.Put(ctx, "vault", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(newKey, oldKey)
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(server.New(server.Config{Claims: s}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(key string) string {
		b, _ := base64.StdEncoding.DecodeString(key)
		return engine.MasterKeyID(b)
	}

	rep, err := c.RewrapDataKeys(ctx, claimcheck.RewrapOptions{Namespace: "vault", DryRun: true})
	if err != nil || !rep.DryRun || rep.Rewrapped != 1 || rep.MasterKeyID != mk(newKey) || rep.ByMasterKey[mk(oldKey)] != 1 || rep.Pending() != 1 {
		t.Fatalf("dry run over HTTP: %+v, %v", rep, err)
	}
	rep, err = c.RewrapDataKeys(ctx, claimcheck.RewrapOptions{Namespace: "vault"})
	if err != nil || rep.DryRun || rep.Rewrapped != 1 || rep.Pending() != 0 || rep.ByMasterKey[mk(newKey)] != 1 {
		t.Fatalf("rewrap over HTTP: %+v, %v", rep, err)
	}
	rep, err = c.RewrapDataKeys(ctx, claimcheck.RewrapOptions{Namespace: "vault"})
	if err != nil || rep.Rewrapped != 0 || rep.AlreadyCurrent != 1 {
		t.Fatalf("second rewrap over HTTP: %+v, %v", rep, err)
	}
	// A namespace without a data key: nothing to do.
	if rep, err := c.RewrapDataKeys(ctx, claimcheck.RewrapOptions{Namespace: "plain"}); err != nil || rep.Rewrapped+rep.AlreadyCurrent+rep.Failed != 0 {
		t.Fatalf("rewrap of a plain namespace: %+v, %v", rep, err)
	}
	es, err := c.NamespaceEvents(ctx, "vault", claimcheck.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == "data_key_rewrapped" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d data_key_rewrapped events over HTTP, want 1: %+v", n, es)
	}
	p, err := c.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem after the rewrap: %v", err)
	}

	// The whole store is not rewrapped over HTTP.
	if _, err := c.RewrapDataKeys(ctx, claimcheck.RewrapOptions{}); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "rewrap-keys") {
		t.Fatalf("rewrap without a namespace: %v", err)
	}
	// Bad queries are refused, naming the parameter.
	for query, want := range map[string]string{"dry_run=maybe": "dry_run", "dryrun=true": "dryrun", "dry_run=1&dry_run=0": "dry_run"} {
		resp, err := http.Post(srv.URL+"/v1/namespaces/vault/key/rewrap?"+query, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e api.Error
		json.Unmarshal(body, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Code != api.CodeInvalidArgument || !strings.Contains(e.Message, want) {
			t.Errorf("POST ?%s: %s %s; want 400 invalid_argument naming %s", query, resp.Status, body, want)
		}
	}
}
