package client_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// TestConcurrentCallsReuseConnections runs two rounds of concurrent puts
// and redeems: the second round must find the connections of the first
// idle and reuse them, instead of dialling again for all but a couple.
// net/http may dial a spare connection when a request starts just before
// another returns its connection to the pool, so the bound leaves room for
// a few such dials; with net/http's default of 2 idle connections per host
// the second round dials again for nearly every worker.
func TestConcurrentCallsReuseConnections(t *testing.T) {
	const workers = 16
	b := setup(t)
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(b.http.Config.Handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := randomBytes(t, 64<<10)
	var firstRound int64
	for round := range 2 {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				p := bytes.Clone(data)
				p[0], p[1] = byte(round), byte(w) // no dedup
				ref, err := c.Put(ctx, "raw", bytes.NewReader(p), claimcheck.PutOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				got, err := c.Redeem(ctx, ref)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := got.Bytes(); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if round == 0 {
			firstRound = dials.Load()
		}
	}
	if again := dials.Load() - firstRound; again >= workers/2 {
		t.Errorf("the second round of %d concurrent calls opened %d new connections (the first opened %d), want fewer than %d: idle connections are not kept",
			workers, again, firstRound, workers/2)
	}
}
