package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// A producer puts a payload through the HTTP API and passes the small
// reference on; a consumer redeems it and gets the verified bytes back.
// Errors are the same sentinels as in embedded mode.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "claimcheck-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	store, err := engine.Open(ctx, engine.Config{Data: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	srv := httptest.NewServer(server.New(server.Config{Claims: store, Ready: store.Ready}))
	defer srv.Close()

	c, err := client.New(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	ref, err := c.Put(ctx, "orders", strings.NewReader(`{"order":42}`), claimcheck.PutOptions{ContentType: "application/json"})
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.Redeem(ctx, ref)
	if err != nil {
		log.Fatal(err)
	}
	data, err := p.Bytes()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.ContentType, string(data))

	if err := c.Delete(ctx, ref); err != nil {
		log.Fatal(err)
	}
	_, err = c.Redeem(ctx, ref)
	var gone *claimcheck.GoneError
	fmt.Println(errors.Is(err, claimcheck.ErrGone), errors.As(err, &gone) && gone.Reason == claimcheck.ReasonDeleted)
	// Output:
	// application/json {"order":42}
	// true true
}
