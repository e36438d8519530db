package dispatch

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// The hand-written encoding is encoding/json's, byte for byte, whatever
// the strings hold.
func TestCloudEventEncodingIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	odd := []string{"", "plain", "quote\" back\\slash", "ctl\x00\x01\x1f\b\f\n\r\t", "<html>&amp;", "line\u2028para\u2029",
		"bad \xff\xfe utf8 \xe2\x82", "ünïcödé ✓ 😀", strings.Repeat("x", 300)}
	var es []meta.FeedEvent
	for i, s := range odd {
		es = append(es, meta.FeedEvent{Event: meta.Event{Seq: int64(1e18) + int64(i),
			At: time.Date(2026, 11, 27, 11, 0, 0, i*123456789%1e9, time.UTC), Kind: "created" + s,
			Namespace: s, Tenant: "t" + s, ClaimID: s, BlobID: s, Actor: s, Reason: s, Detail: s}})
	}
	for _, e := range es {
		if got, want := appendCloudEvent(nil, e), NewCloudEvent(e).Marshal(); !bytes.Equal(got, want) {
			t.Errorf("event %q:\n got %s\nwant %s", e.ClaimID, got, want)
		}
	}
	want := []byte{'['}
	for i, e := range es {
		if i > 0 {
			want = append(want, ',')
		}
		want = append(want, NewCloudEvent(e).Marshal()...)
	}
	if got := MarshalBatch(es); !bytes.Equal(got, append(want, ']')) {
		t.Errorf("batch:\n got %s\nwant %s]", got, want)
	}
}

// A delivery's data.seq is a JSON string: a JavaScript receiver's
// JSON.parse would round a 19-digit number (ADR 0273).
func TestCloudEventSeqIsString(t *testing.T) {
	t.Parallel()
	e := meta.FeedEvent{Event: meta.Event{Seq: 1795910484197391993, At: time.Unix(0, 1795910484197391993).UTC(), Kind: "created", Tenant: "t"}}
	for _, body := range [][]byte{appendCloudEvent(nil, e), MarshalBatch([]meta.FeedEvent{e})} {
		if !bytes.Contains(body, []byte(`"data":{"seq":"1795910484197391993",`)) {
			t.Errorf("delivery %s: want data.seq as the string \"1795910484197391993\"", body)
		}
	}
}

// A signer reused for many deliveries signs each as a fresh HMAC does.
func TestSignerReused(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef01234567")
	s := newSigner(key)
	for i, body := range []string{`{"a":1}`, "", strings.Repeat("b", 5000), `[{"x":2}]`} {
		id := EventID(int64(i + 1))
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + ".1790000000." + body))
		want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
		if got := string(s.append(nil, []byte(id), 1790000000, []byte(body))); got != want {
			t.Errorf("delivery %d: %s, want %s", i, got, want)
		}
	}
}

// Kept connections: a receiver that closed one while it was idle, one
// that answers Connection: close, one with a long answer and one that
// sends an informational answer first all get every delivery, each
// answered by its own response, and a connection is reused when the
// receiver keeps it.
func TestPosterConnections(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	conns := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		conns[r.RemoteAddr] = true
		mu.Unlock()
		if r.Header.Get(HeaderID) == "" || r.Header.Get("Content-Type") != ContentType || r.URL.RequestURI() != "/hook?x=1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch string(b) {
		case "hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
		case "close":
			w.Header().Set("Connection", "close")
		case "long":
			_, _ = w.Write(bytes.Repeat([]byte("z"), maxDrain+10))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	p := newPoster(TargetPolicy{AllowLoopback: true}, 5*time.Second)
	defer p.closeIdle()
	tg, err := newTarget(srv.URL + "/hook?x=1")
	if err != nil {
		t.Fatal(err)
	}
	send := func(body string) {
		t.Helper()
		req := tg.request(nil, ContentType, []byte("1"), 1790000000, []byte("v1,x"), []byte(body))
		a, err := p.post(context.Background(), tg, req)
		if err != nil || a.code != http.StatusNoContent && a.code != http.StatusOK {
			t.Fatalf("%s: %+v, %v", body, a, err)
		}
	}
	send("one")
	send("two")
	mu.Lock()
	if len(conns) != 1 {
		t.Errorf("two deliveries in a row used %d connections, want 1 kept", len(conns))
	}
	mu.Unlock()
	srv.CloseClientConnections() // the receiver drops the idle connection
	time.Sleep(10 * time.Millisecond)
	send("three")
	send("close")
	send("four")
	send("long")
	send("hints")
	send("five")
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(bodies, " "); got != "one two three close four long hints five" {
		t.Errorf("receiver got %q", got)
	}
}
