package engine_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// gcBundle is an engine on SQLite and files whose metadata the test can
// also reach directly, to inject damage straight into the database.
type gcBundle struct {
	*bundle
	meta meta.Store
	db   *sql.DB // a second connection to the same SQLite file
}

func setupGC(t *testing.T) *gcBundle {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := setup(t, func(c *engine.Config) {
		c.Data, c.MetaStore = dir, m
		c.Sweeper.Disabled = true
		c.Sweeper.BackstopGrace = time.Hour
		c.Sweeper.OpDelay = time.Nanosecond
	})
	b.dir = dir
	db, err := sql.Open("sqlite", filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &gcBundle{bundle: b, meta: m, db: db}
}

func (g *gcBundle) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := g.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (g *gcBundle) blobOf(t *testing.T, ref claimcheck.Ref) meta.Blob {
	t.Helper()
	c, err := g.meta.Claim(context.Background(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.meta.Blob(context.Background(), c.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (g *gcBundle) put(t *testing.T, data []byte) claimcheck.Ref {
	t.Helper()
	ref, err := g.store.Put(context.Background(), "plain", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func (g *gcBundle) wantRedeem(t *testing.T, ref claimcheck.Ref, data []byte) {
	t.Helper()
	p, err := g.store.Redeem(context.Background(), ref)
	if err != nil {
		t.Fatalf("redeem %s: %v", ref.ID, err)
	}
	got, err := p.Bytes()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem %s: %d bytes, %v", ref.ID, len(got), err)
	}
}

func (g *gcBundle) backstop(t *testing.T) {
	t.Helper()
	res, err := g.store.Sweeper().Backstop().Run(context.Background(), 0)
	if err != nil || !res.PassDone {
		t.Fatalf("backstop: %+v, %v", res, err)
	}
}

// TestBackstopRepairsDrift injects refcount drift straight into the
// database, in both directions, and checks that the backstop finds and
// repairs it, that fsck's report sees it first, and that an undercount
// never causes a delete.
func TestBackstopRepairsDrift(t *testing.T) {
	g := setupGC(t)
	ctx := context.Background()
	over, under, lost := []byte("over counted"), []byte("under counted"), []byte("no claim left")
	refOver, refUnder, refLost := g.put(t, over), g.put(t, under), g.put(t, lost)
	bOver, bUnder, bLost := g.blobOf(t, refOver), g.blobOf(t, refUnder), g.blobOf(t, refLost)

	// Overcount; undercount to zero on a referenced blob (the dangerous
	// direction); and a committed blob whose claims are all finished.
	g.exec(t, `UPDATE blobs SET refcount = 7 WHERE id = ?`, bOver.ID)
	g.exec(t, `UPDATE blobs SET refcount = 0 WHERE id = ?`, bUnder.ID)
	if err := g.store.Delete(ctx, refLost); err != nil {
		t.Fatal(err)
	}
	g.exec(t, `UPDATE blobs SET state = 'committed', collect_at = NULL, refcount = 1 WHERE id = ?`, bLost.ID)

	rep, err := g.store.Sweeper().Inspect(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Drift) != 3 || !rep.Problems() {
		t.Fatalf("fsck report: drift %+v, want the three blobs", rep.Drift)
	}

	g.backstop(t)
	if b := g.blobOf(t, refOver); b.Refcount != 1 || b.State != meta.BlobCommitted {
		t.Errorf("overcounted blob after backstop = %+v", b)
	}
	if b := g.blobOf(t, refUnder); b.Refcount != 1 || b.State != meta.BlobCommitted {
		t.Errorf("undercounted blob after backstop = %+v", b)
	}
	lostNow, _ := g.meta.Blob(ctx, bLost.ID)
	if lostNow.State != meta.BlobOrphaned || !lostNow.CollectAt.Equal(g.clock.Now().Add(time.Hour)) {
		t.Errorf("unreferenced committed blob after backstop = %+v, want orphaned with an hour of grace", lostNow)
	}
	events, err := g.meta.Events(ctx, 0, 100)
	events = gcEvents(events)
	if err != nil || len(events) != 3 {
		t.Errorf("events = %+v, %v; want three refcount_drift events", events, err)
	}

	// The worst undercount: a referenced blob marked orphaned and due.
	// Collection re-checks the claims and never deletes it.
	g.exec(t, `UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ? WHERE id = ?`, g.clock.Now().UnixNano(), bUnder.ID)
	g.clock.Advance(2 * time.Hour)
	res, err := g.store.SweepOnce(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.BlobsCollected != 1 {
		t.Errorf("sweep collected %d blobs, want only the unreferenced one", res.BlobsCollected)
	}
	g.wantRedeem(t, refUnder, under)
	g.wantRedeem(t, refOver, over)
	if b, _ := g.meta.Blob(ctx, bLost.ID); b.State != meta.BlobDeleted {
		t.Errorf("unreferenced blob after grace and a sweep = %s, want deleted", b.State)
	}
	rep, err = g.store.Sweeper().Inspect(ctx, true)
	if err != nil || rep.Problems() {
		t.Errorf("fsck after repair: %+v, %v", rep, err)
	}
}

// TestBackstopDebrisAndMissing: an object without a row (a crashed
// write's temp file) is deleted once older than the grace period and
// spared before; a row whose object vanished is reported (metric, event)
// and kept.
func TestBackstopDebrisAndMissing(t *testing.T) {
	g := setupGC(t)
	ctx := context.Background()
	keep, gone := g.put(t, []byte("keep me")), g.put(t, []byte("lose me"))
	bGone := g.blobOf(t, gone)
	blobDir := filepath.Join(g.dir, "blobs")
	if err := os.Remove(filepath.Join(blobDir, filepath.FromSlash(bGone.Key))); err != nil {
		t.Fatal(err)
	}
	oldTmp := filepath.Join(blobDir, "plain", "b_crashed.3f2a9c.tmp")
	youngTmp := filepath.Join(blobDir, "plain", "b_writing.77aa01.tmp")
	for _, p := range []string{oldTmp, youngTmp} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// File times are real; the store's clock is fake.
	if err := os.Chtimes(oldTmp, g.clock.Now().Add(-2*time.Hour), g.clock.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(youngTmp, g.clock.Now().Add(-time.Minute), g.clock.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	rep, err := g.store.Sweeper().Inspect(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Debris) != 1 || len(rep.Missing) != 1 || rep.Missing[0].ID != bGone.ID {
		t.Fatalf("fsck: debris %+v missing %+v", rep.Debris, rep.Missing)
	}
	g.backstop(t)
	if _, err := os.Stat(oldTmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old temp file still there after the backstop: %v", err)
	}
	if _, err := os.Stat(youngTmp); err != nil {
		t.Errorf("young temp file (a write in progress?) was deleted: %v", err)
	}
	if b, err := g.meta.Blob(ctx, bGone.ID); err != nil || b.State != meta.BlobCommitted {
		t.Errorf("row of the missing object = %+v, %v; want it kept", b, err)
	}
	events, _ := g.meta.Events(ctx, 0, 100)
	events = gcEvents(events)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	if len(events) != 2 || kinds[0] != meta.EventObjectMissing || kinds[1] != meta.EventDebrisDeleted {
		t.Errorf("events = %v, want object_missing then debris_deleted", kinds)
	}
	g.wantRedeem(t, keep, []byte("keep me"))
}

// TestBackstopResumes: a pass stopped after a page continues from its
// cursor, and a finished pass is not due again before the interval.
func TestBackstopResumes(t *testing.T) {
	g := setupGC(t)
	ctx := context.Background()
	for i := range 600 { // more than two pages of 250
		g.put(t, []byte{byte(i), byte(i >> 8), 'x'})
	}
	bs := g.store.Sweeper().Backstop()
	first, err := bs.Run(ctx, 1)
	if err != nil || first.PassDone || first.BlobsScanned != 250 {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	rest, err := bs.Run(ctx, 0)
	if err != nil || !rest.PassDone || rest.BlobsScanned != 350 || rest.ObjectsListed != 600 {
		t.Fatalf("rest of the pass: %+v, %v", rest, err)
	}
	if due, _ := bs.Due(ctx, g.clock.Now().Add(time.Hour)); due {
		t.Error("backstop due again an hour after a finished pass")
	}
	if due, _ := bs.Due(ctx, g.clock.Now().Add(7*time.Hour)); !due {
		t.Error("backstop not due 7h after a finished pass (interval 6h)")
	}
}

// TestDedupMetrics: a digest-first put onto an orphan in its grace period
// counts a hit, the bytes not stored and a flip-back.
func TestDedupMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *engine.Config) { c.Registerer = reg })
	ctx := context.Background()
	data := bytes.Repeat([]byte("metric "), 1000)
	ref, err := b.store.Put(ctx, "plain", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	opts := claimcheck.PutOptions{Digest: claimcheck.DigestOf(data), Size: int64(len(data))}
	if _, err := b.store.Put(ctx, "plain", failingBody{}, opts); err != nil {
		t.Fatalf("digest-first put read its body or failed: %v", err)
	}
	for name, want := range map[string]float64{
		"claimcheck_dedup_hits_total":        1,
		"claimcheck_dedup_bytes_saved_total": float64(len(data)),
		"claimcheck_dedup_flip_backs_total":  1,
	} {
		if got := metrictest.Sum(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// failingBody fails the test's put if it is read at all.
type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, errors.New("the body was read") }

// gcEvents keeps the garbage collector's findings from the events log,
// which also holds the claims' audit trail (ADR 0070).
func gcEvents(events []meta.Event) []meta.Event {
	var out []meta.Event
	for _, e := range events {
		switch e.Kind {
		case meta.EventObjectMissing, meta.EventDebrisDeleted, meta.EventRefcountDrift:
			out = append(out, e)
		}
	}
	return out
}
