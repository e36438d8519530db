package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/claimcheck/claimcheck/server"
)

// TestServeGraceful: cancelling Serve's context lets an in-flight request
// finish, then Serve returns nil.
func TestServeGraceful(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "finished") // the test reads what arrived
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, ln, h, slog.New(slog.NewTextHandler(t.Output(), nil))) }()

	type answer struct {
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{string(b), err}
	}()
	<-started
	cancel()
	close(release)
	if a := <-answered; a.err != nil || a.body != "finished" {
		t.Fatalf("in-flight request during shutdown: %q, %v", a.body, a.err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("still accepting connections after shutdown")
	}
}

func TestServeListenerFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := server.Serve(context.Background(), ln, http.NotFoundHandler(), nil); err == nil {
		t.Fatal("Serve on a closed listener returned nil")
	}
}
