package systemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/history"
)

// failoverLoad is writers putting and redeeming through the history
// recorder while the metadata database fails over: it keeps every
// acknowledged put, every call's outcome and time (for the window of
// refusals), and every answer a client must never see (a 500, wrong
// bytes).
type failoverLoad struct {
	recs []*history.Recorder // one per server
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	acked   []ackedPut
	checked int        // acked[:checked] were redeemed by a check
	calls   []loadCall // every call's outcome, in completion order
	wrong   []string   // answers other than success or unavailable
}

type ackedPut struct {
	ref  claimcheck.Ref
	data []byte
}

type loadCall struct {
	server     int
	start, end time.Time
	refused    bool
}

type roundNote struct {
	name                      string
	recovered                 time.Duration
	refusals, calls           int
	firstRefused, lastRefused time.Duration
}

func newFailoverLoad(h *recorded, servers []*replica) *failoverLoad {
	l := &failoverLoad{done: make(chan struct{})}
	for _, r := range servers {
		l.recs = append(l.recs, h.rec.With(r.client))
	}
	return l
}

// start runs n writers until stop.
func (l *failoverLoad) start(n int) {
	for w := range n {
		l.wg.Add(1)
		go l.writer(uint64(w))
	}
}

func (l *failoverLoad) stop() {
	close(l.done)
	l.wg.Wait()
}

// writer puts a payload of random bytes, and redeems it through the
// other server once acknowledged, until stopped.
func (l *failoverLoad) writer(seed uint64) {
	defer l.wg.Done()
	rnd := rand.New(rand.NewPCG(seed, 7))
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		default:
		}
		data := make([]byte, 1+rnd.IntN(32<<10))
		for j := range data {
			data[j] = byte(rnd.Uint32())
		}
		s := i % len(l.recs)
		var ref claimcheck.Ref
		_, err := l.call(s, func(ctx context.Context) (err error) {
			ref, err = l.recs[s].Put(ctx, "load", data, claimcheck.PutOptions{})
			return err
		})
		if err != nil {
			time.Sleep(50 * time.Millisecond) // a refusal: retry after a pause, as a client would
			continue
		}
		l.mu.Lock()
		l.acked = append(l.acked, ackedPut{ref: ref, data: data})
		l.mu.Unlock()
		s = (s + 1) % len(l.recs)
		var got []byte
		if _, err := l.call(s, func(ctx context.Context) (err error) {
			got, err = l.recs[s].Redeem(ctx, ref)
			return err
		}); err == nil && !bytes.Equal(got, data) {
			l.mu.Lock()
			l.wrong = append(l.wrong, fmt.Sprintf("redeem %s: %d bytes, not the %d put", ref.ID, len(got), len(data)))
			l.mu.Unlock()
		}
	}
}

// call runs one client call on server s and notes its outcome:
// success, refused (unavailable: 503 or no answer), or an answer a
// client must never see during a failover (a 500, any other error).
func (l *failoverLoad) call(s int, f func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	c := loadCall{server: s, start: start, end: time.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
	case errors.Is(err, claimcheck.ErrUnavailable):
		c.refused = true
	default:
		var ce *client.Error
		if errors.As(err, &ce) {
			l.wrong = append(l.wrong, fmt.Sprintf("%d %s: %v", ce.Status, ce.Code, err))
		} else {
			l.wrong = append(l.wrong, err.Error())
		}
	}
	l.calls = append(l.calls, c)
	return c.end.Sub(start), err
}

// unchecked returns the puts acknowledged since the last call.
func (l *failoverLoad) unchecked() []ackedPut {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.acked[l.checked:]
	l.checked = len(l.acked)
	return out
}

// scenario runs action and waits until recovered holds and every server
// has answered a call begun after that; it notes the refusals in between.
func (l *failoverLoad) scenario(t *testing.T, name string, action func(), recovered func() bool) {
	t.Helper()
	at := time.Now()
	action()
	deadline := at.Add(2 * time.Minute)
	for !recovered() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the cluster did not recover within 2 minutes", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	recoveredAt := time.Now()
	for !l.servedSince(recoveredAt) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the servers answered no call begun after the cluster recovered", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	n := roundNote{name: name, recovered: recoveredAt.Sub(at)}
	l.mu.Lock()
	for _, c := range l.calls {
		if c.end.Before(at) {
			continue
		}
		n.calls++
		if !c.refused {
			continue
		}
		if n.refusals == 0 {
			n.firstRefused = c.end.Sub(at)
		}
		n.refusals++
		n.lastRefused = c.end.Sub(at)
	}
	wrong := append([]string(nil), l.wrong...)
	l.mu.Unlock()
	if n.refusals == 0 {
		t.Logf("%s: cluster recovered after %s; none of %d calls refused", name, n.recovered.Round(time.Millisecond), n.calls)
	} else {
		t.Logf("%s: cluster recovered after %s; %d of %d calls refused (unavailable), ending from %s to %s after the action: a window of refusals of %s",
			name, n.recovered.Round(time.Millisecond), n.refusals, n.calls, n.firstRefused.Round(time.Millisecond),
			n.lastRefused.Round(time.Millisecond), (n.lastRefused - n.firstRefused).Round(time.Millisecond))
	}
	for _, w := range wrong {
		t.Errorf("%s: a client saw %s", name, w)
	}
	l.mu.Lock()
	l.wrong = nil
	l.mu.Unlock()
}

// servedSince reports whether every server answered a call begun after
// since with success.
func (l *failoverLoad) servedSince(since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := make([]bool, len(l.recs))
	for _, c := range l.calls {
		if !c.refused && c.start.After(since) {
			ok[c.server] = true
		}
	}
	for _, o := range ok {
		if !o {
			return false
		}
	}
	return true
}

// report logs the run's totals and the answers never allowed.
func (l *failoverLoad) report(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	refused := 0
	for _, c := range l.calls {
		if c.refused {
			refused++
		}
	}
	t.Logf("%d calls, %d puts acknowledged, %d refused as unavailable", len(l.calls), len(l.acked), refused)
	for _, w := range l.wrong {
		t.Errorf("a client saw %s", w)
	}
}
