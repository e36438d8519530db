package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/sweep"
)

// lifecycleNamespaces are the TTL ADR's settings at test scale.
func lifecycleNamespaces(c *engine.Config) {
	yes := true
	c.Namespaces["dar"] = claimcheck.Policy{TTL: claimcheck.TTLPolicy{
		MaxAge: claimcheck.Duration(24 * time.Hour), DeleteAfterRead: &yes,
		RetentionAfterRead: claimcheck.Duration(5 * time.Minute), GracePeriod: claimcheck.Duration(time.Hour)}}
	c.Namespaces["keep"] = claimcheck.Policy{TTL: claimcheck.TTLPolicy{
		MaxAge: claimcheck.Duration(24 * time.Hour), RetentionAfterRead: claimcheck.Duration(5 * time.Minute),
		GracePeriod: claimcheck.Duration(time.Hour)}}
	c.Sweeper.Disabled = true // tests drive the sweeper by hand
}

func (b *bundle) sweep(t *testing.T) sweep.Result {
	t.Helper()
	res, err := b.store.SweepOnce(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantGone(t *testing.T, err error, reason claimcheck.GoneReason) {
	t.Helper()
	var gone *claimcheck.GoneError
	if !errors.As(err, &gone) || gone.Reason != reason {
		t.Fatalf("got %v, want gone (%s)", err, reason)
	}
}

func TestScenarioHappyPathAndRedelivery(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	ref := b.put(t, "dar", jsonDoc(100<<10))
	b.clock.Advance(time.Minute)
	if _, err := b.redeem(t, ref); err != nil { // first read: window of 5m starts
		t.Fatal(err)
	}
	info, _ := b.store.Stat(context.Background(), ref)
	if !info.DeleteAt.Equal(t0.Add(6 * time.Minute)) {
		t.Fatalf("delete_at after first read: %v", info.DeleteAt)
	}
	b.clock.Advance(4*time.Minute + 59*time.Second) // redelivery inside the window
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatalf("redelivered read inside the window: %v", err)
	}
	if info, _ := b.store.Stat(context.Background(), ref); !info.DeleteAt.Equal(t0.Add(6 * time.Minute)) {
		t.Fatalf("a later read must not extend the window: %v", info.DeleteAt)
	}
	b.clock.Advance(time.Second)
	_, err := b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonReadRetention)

	// The blob waits out its grace period, then the sweeper collects it.
	if len(b.objects(t)) != 1 {
		t.Fatal("the object must survive the grace period")
	}
	b.sweep(t)
	if len(b.objects(t)) != 1 {
		t.Fatal("collected before grace")
	}
	b.clock.Advance(time.Hour)
	if res := b.sweep(t); res.BlobsCollected != 1 {
		t.Fatalf("sweep after grace: %+v", res)
	}
	if objs := b.objects(t); len(objs) != 0 {
		t.Fatalf("objects left: %v", objs)
	}
}

func TestScenarioConsumerCrash(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	ref := b.put(t, "dar", []byte("never read"))
	b.clock.Advance(24*time.Hour - time.Second)
	if res := b.sweep(t); res.ClaimsFinished != 0 {
		t.Fatalf("finished before max_age: %+v", res)
	}
	b.clock.Advance(time.Second)
	if res := b.sweep(t); res.ClaimsFinished != 1 {
		t.Fatalf("the sweeper must finish the unread claim at max_age: %+v", res)
	}
	info, err := b.store.Stat(context.Background(), ref)
	if err != nil || info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonExpired || info.Reads != 0 {
		t.Fatalf("stat: %+v %v", info, err)
	}
	b.clock.Advance(time.Hour)
	b.sweep(t)
	if objs := b.objects(t); len(objs) != 0 {
		t.Fatalf("objects left: %v", objs)
	}
}

func TestScenarioSlowConsumer(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	ref := b.put(t, "dar", []byte("slow"))
	b.clock.Advance(24*time.Hour - time.Minute)
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatalf("a read before max_age must succeed: %v", err)
	}
	// The window may not outlive max_age.
	if info, _ := b.store.Stat(context.Background(), ref); !info.DeleteAt.Equal(ref.ExpiresAt) {
		t.Fatalf("delete_at %v, want max_age %v", info.DeleteAt, ref.ExpiresAt)
	}
	b.clock.Advance(time.Minute)
	_, err := b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonExpired)
}

func TestFanOutThreeConsumers(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	ctx := context.Background()
	ref, err := b.store.Put(ctx, "keep", strings.NewReader("for three"), claimcheck.PutOptions{ConsumerNames: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"a", "b", "a", "b"} {
		if err := b.store.Release(ctx, ref, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.store.Release(ctx, ref, "intruder"); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("release by an unnamed consumer: %v", err)
	}
	b.clock.Advance(time.Hour)
	b.sweep(t)
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatalf("two of three released: must still be readable: %v", err)
	}
	if err := b.store.Release(ctx, ref, "c"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(4 * time.Minute)
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatalf("inside the retention window after the last release: %v", err)
	}
	b.clock.Advance(time.Minute)
	if res := b.sweep(t); res.ClaimsFinished != 1 {
		t.Fatalf("sweep after the window: %+v", res)
	}
	_, err = b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonReleased)
	if err := b.store.Release(ctx, ref, "c"); err != nil {
		t.Fatalf("a repeated ack after the claim finished must stay idempotent: %v", err)
	}
	if err := b.store.Release(ctx, ref, "d"); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("a new ack after the claim finished: %v", err)
	}
}

func TestRestartInsideRetentionWindow(t *testing.T) {
	dir := t.TempDir()
	open := func() *bundle {
		b := setup(t, lifecycleNamespaces, func(c *engine.Config) { c.Data = dir })
		return b
	}
	b := open()
	ref := b.put(t, "dar", []byte("survives restarts"))
	b.clock.Advance(time.Minute)
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatal(err)
	}
	b.store.Close()

	b = open() // a new process: its clock starts at t0 again
	b.clock.Set(t0.Add(7 * time.Minute))
	if res := b.sweep(t); res.ClaimsFinished != 1 {
		t.Fatalf("the pending deletion must survive the restart: %+v", res)
	}
	info, err := b.store.Stat(context.Background(), ref)
	if err != nil || info.DeleteReason != claimcheck.ReasonReadRetention {
		t.Fatalf("%+v %v", info, err)
	}
}

// TestRandomDeadlinesUnderTraffic puts claims with random deadlines while
// goroutines read, release and delete them and the clock moves; then it
// moves past every deadline and sweeps once. No live claim and no object
// may remain, and no claim may have been finished before its deadline.
func TestRandomDeadlinesUnderTraffic(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	mem, err := blob.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	b := setup(t, func(c *engine.Config) {
		lifecycleNamespaces(c)
		c.BlobStore = mem
		yes := true
		for i := 1; i <= 8; i++ {
			c.Namespaces[fmt.Sprintf("ttl%d", i)] = claimcheck.Policy{TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(time.Duration(i) * 10 * time.Minute), DeleteAfterRead: &yes,
				RetentionAfterRead: claimcheck.Duration(time.Duration(i) * time.Minute), GracePeriod: claimcheck.Duration(time.Minute)}}
		}
	})
	ctx := context.Background()
	type rec struct {
		ref  claimcheck.Ref
		pol  claimcheck.Policy
		read time.Time // first successful read seen by the test
	}
	var mu sync.Mutex
	var recs []*rec
	var wg sync.WaitGroup
	workers := 4
	perWorker := n / workers
	// Time moves with the traffic: every 20 operations the clock advances
	// 30s and the sweeper, running alongside, is woken for a bounded run.
	var ops atomic.Int64
	wake := make(chan struct{}, 1)
	sweeperDone := make(chan struct{})
	go func() {
		defer close(sweeperDone)
		for range wake {
			if _, err := b.store.SweepOnce(ctx, 500); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	tick := func() {
		if ops.Add(1)%20 == 0 {
			b.clock.Advance(30 * time.Second)
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < perWorker; i++ {
				ns := fmt.Sprintf("ttl%d", 1+r.IntN(8))
				pol, _ := b.store.Policy(ctx, ns)
				data := []byte(fmt.Sprintf("worker %d claim %d %d", w, i, r.Uint64()))
				ref, err := b.store.Put(ctx, ns, strings.NewReader(string(data)), claimcheck.PutOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				tick()
				rc := &rec{ref: ref, pol: pol}
				mu.Lock()
				recs = append(recs, rc)
				var other *rec
				if len(recs) > 1 {
					other = recs[r.IntN(len(recs))]
				}
				mu.Unlock()
				if other == nil {
					continue
				}
				tick()
				before := b.clock.Now()
				switch r.IntN(4) {
				case 0, 1:
					p, err := b.store.Redeem(ctx, other.ref)
					if err == nil {
						_, err = p.Bytes()
						mu.Lock()
						if other.read.IsZero() {
							other.read = before
						}
						mu.Unlock()
					}
					if err != nil && !errors.Is(err, claimcheck.ErrGone) {
						t.Errorf("redeem: %v", err)
					}
				case 2:
					if err := b.store.Release(ctx, other.ref, "c"); err != nil && !errors.Is(err, claimcheck.ErrGone) {
						t.Errorf("release: %v", err)
					}
				case 3:
					if _, err := b.store.Stat(ctx, other.ref); err != nil {
						t.Errorf("stat: %v", err)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(wake)
	<-sweeperDone

	// No claim finished before its deadline.
	for _, rc := range recs {
		info, err := b.store.Stat(ctx, rc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != claimcheck.StateDeleted {
			continue
		}
		switch info.DeleteReason {
		case claimcheck.ReasonExpired:
			if info.DeletedAt.Before(rc.ref.ExpiresAt) {
				t.Fatalf("%s expired at %v before max_age %v", rc.ref.ID, info.DeletedAt, rc.ref.ExpiresAt)
			}
		case claimcheck.ReasonReadRetention:
			if info.FirstReadAt.IsZero() || info.DeletedAt.Before(info.FirstReadAt.Add(rc.pol.TTL.RetentionAfterRead.D())) {
				t.Fatalf("%s finished at %v, inside its read window from %v", rc.ref.ID, info.DeletedAt, info.FirstReadAt)
			}
		case claimcheck.ReasonReleased:
			if info.Releases < info.Consumers {
				t.Fatalf("%s released with %d of %d releases", rc.ref.ID, info.Releases, info.Consumers)
			}
		default:
			t.Fatalf("%s finished with unexpected reason %s", rc.ref.ID, info.DeleteReason)
		}
	}

	// Past every deadline, one sweep finishes every claim; past the grace
	// period of the blobs that orphaned, one more collects every object.
	b.clock.Advance(3 * time.Hour)
	b.sweep(t)
	for _, rc := range recs {
		info, err := b.store.Stat(ctx, rc.ref)
		if err != nil || info.State != claimcheck.StateDeleted {
			t.Fatalf("%s still %s after every deadline (%v)", rc.ref.ID, info.State, err)
		}
	}
	b.clock.Advance(time.Minute)
	b.sweep(t)
	if objs, _, err := mem.List(ctx, "", "", n); err != nil || len(objs) != 1 || !blob.IsOwnerMarker(objs[0].Key) {
		// only the store's owner marker
		t.Fatalf("%d objects remain (%v)", len(objs), err)
	}
	if len(recs) != workers*perWorker {
		t.Fatalf("only %d claims were put", len(recs))
	}
}

// Read receipts are written off the redeem path; a redeem right after the
// first read must still see the window that read started, however fast
// the clock moves in between.
func TestRedeliveryWindowIsExactRightAfterTheFirstRead(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	for i := range 50 {
		ref := b.put(t, "dar", []byte(fmt.Sprintf("payload %d", i)))
		if _, err := b.redeem(t, ref); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(5 * time.Minute) // the window is exactly over
		_, err := b.redeem(t, ref)
		wantGone(t, err, claimcheck.ReasonReadRetention)
	}
}
