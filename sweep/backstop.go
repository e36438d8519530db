package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/service"
)

// The backstop (docs/ARCHITECTURE.md, "Backstop"; ADR 0010) is the low-frequency full pass that
// repairs what the steady state cannot see: refcount hints that drifted,
// committed blobs that lost their last claim without being orphaned,
// objects without a row (debris of crashed writes) and rows without an
// object. The steady state never lists the bucket; the backstop does, a
// page at a time.
//
// A pass has two phases, each paged, and its position is a cursor in the
// metadata store, saved after every page, so a pass interrupted by a crash,
// a lost lease or a budget resumes where it stopped:
//
//	blobs:<start>:<after id>    walking blob rows in id order
//	objects:<start>:<after key> walking the bucket in key order
//	done:<finished>             idle until the next interval
//
// Every change is made by a metadata operation that re-checks the rows it
// touches in its own transaction, so the pass is safe under concurrent
// puts, releases and collections: it never deletes anything itself except
// objects that have no row at all (and are older than the grace period),
// and it never deletes a row.

// BackstopLease is the lease the backstop holds while it runs, so one
// replica runs it.
const BackstopLease = "gc-backstop"

// BackstopCursor is the name of the backstop's cursor.
const BackstopCursor = "gc-backstop"

// BackstopResult counts the work of a backstop run.
type BackstopResult struct {
	BlobsScanned   int   `json:"blobs_scanned"`
	DriftFixed     int   `json:"refcount_drift_fixed"`
	Orphaned       int   `json:"blobs_orphaned"`
	ObjectsListed  int   `json:"objects_listed"`
	DebrisDeleted  int   `json:"debris_deleted"`
	DebrisBytes    int64 `json:"debris_bytes"`
	MissingObjects int   `json:"missing_objects"`
	Unreadable     int   `json:"unreadable_objects"` // marked damaged: the storage keeps answering them with errors (ADR 0255)
	Unchecked      int   `json:"unchecked_objects"`  // the storage did not answer; checked again next run
	// Findings names every object of the run found missing, resized,
	// unreadable or not checked, for the report at the end.
	Findings []ObjectFinding `json:"findings"`
	Pages    int             `json:"pages"`
	PassDone bool            `json:"pass_done"` // a whole pass finished in this run
	Skipped  bool            `json:"skipped"`   // another replica holds the lease
}

// Backstop runs the backstop passes.
type Backstop struct {
	cfg     Config
	meta    Store
	blobs   blob.Store
	clock   clock.Clock
	log     *slog.Logger
	metrics *Metrics
	// lease keeps the backstop to one replica; a pass renews it page
	// by page.
	lease *service.Lease
	// wait is the clock of the pause between pages: real time, as the
	// sweeper's (Sweeper.wait).
	wait clock.Clock

	mu    sync.Mutex
	retry map[string]meta.Blob // objects a page could not check, by blob id
}

// NewBackstop returns the backstop over the given stores; metrics nil
// creates unregistered ones.
func NewBackstop(cfg Config, m Store, b blob.Store, clk clock.Clock, log *slog.Logger, metrics *Metrics) *Backstop {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	bs := &Backstop{cfg: cfg.WithDefaults(), meta: m, blobs: b, clock: clk, log: log, metrics: metrics, wait: clock.Real{}}
	// The lease outlives a run of the sweeper's tick; a pass that takes
	// longer renews it page by page.
	bs.lease = service.NewLease(m, service.LeaseConfig{Name: BackstopLease, Holder: meta.LeaseHolder(),
		TTL: bs.cfg.MaxRuntimePerRun + bs.cfg.Interval, Clock: clk, Logger: log})
	return bs
}

// Due reports whether a pass should run at now: one is in progress, or
// the last finished at least backstop_interval ago (or never ran).
func (bs *Backstop) Due(ctx context.Context, now time.Time) (bool, error) {
	cur, err := bs.meta.Cursor(ctx, BackstopCursor)
	if err != nil {
		return false, err
	}
	phase, at, _ := parseCursor(cur)
	if phase != "done" {
		return true, nil
	}
	return !now.Before(at.Add(bs.cfg.BackstopInterval)), nil
}

// Run continues (or starts) a pass and works until it finishes or
// maxPages pages are done (maxPages <= 0: until the pass finishes), with
// op_delay between pages. It holds the backstop lease while it runs and
// returns Skipped when another replica has it.
func (bs *Backstop) Run(ctx context.Context, maxPages int) (res BackstopResult, err error) {
	held, err := bs.lease.Run(ctx, func(ctx context.Context) error { return bs.pass(ctx, maxPages, &res) })
	switch {
	case !held && err != nil:
		return res, fmt.Errorf("sweep: backstop lease: %w", err)
	case !held:
		res.Skipped = true
	}
	return res, err
}

// pass is Run with the lease held.
func (bs *Backstop) pass(ctx context.Context, maxPages int, res *BackstopResult) error {
	cur, err := bs.meta.Cursor(ctx, BackstopCursor)
	if err != nil {
		return fmt.Errorf("sweep: backstop cursor: %w", err)
	}
	if err := bs.retryUnchecked(ctx, res); err != nil {
		return fmt.Errorf("sweep: backstop: %w", err)
	}
	phase, start, pos := parseCursor(cur)
	if phase == "done" || phase == "" {
		phase, start, pos = "blobs", bs.clock.Now(), ""
	}
	for maxPages <= 0 || res.Pages < maxPages {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Renew the lease page by page: a long pass outlives one TTL.
		if err := bs.lease.Renew(ctx); err != nil {
			return fmt.Errorf("sweep: backstop: %w", err)
		}
		var next string
		var more bool
		switch phase {
		case "blobs":
			next, more, err = bs.blobPage(ctx, pos, res)
			if err == nil && !more {
				phase, next = "objects", ""
			}
		case "objects":
			next, more, err = bs.objectPage(ctx, pos, res)
			if err == nil && !more {
				phase, start, next = "done", bs.clock.Now(), ""
				res.PassDone = true
			}
		}
		if err != nil {
			return err
		}
		res.Pages++
		pos = next
		if err := bs.meta.SetCursor(ctx, BackstopCursor, formatCursor(phase, start, pos)); err != nil {
			return fmt.Errorf("sweep: backstop cursor: %w", err)
		}
		if phase == "done" {
			bs.metrics.GC.Passes.Inc()
			return nil
		}
		if err := clock.Sleep(ctx, bs.wait, bs.cfg.OpDelay); err != nil {
			return err
		}
	}
	return nil
}

// blobPage reconciles one page of blob rows after id after: refcounts
// recounted from claims (both directions), committed blobs without a live
// claim orphaned with grace, and objects of live rows checked.
func (bs *Backstop) blobPage(ctx context.Context, after string, res *BackstopResult) (string, bool, error) {
	page, err := bs.meta.Blobs(ctx, after, bs.cfg.PageSize)
	if err != nil {
		return "", false, fmt.Errorf("sweep: backstop: %w", err)
	}
	if len(page) == 0 {
		return "", false, nil
	}
	res.BlobsScanned += len(page)
	var ids []string
	for _, b := range page {
		if b.State == meta.BlobCommitted || b.State == meta.BlobOrphaned || b.State == meta.BlobDeleting {
			ids = append(ids, b.ID)
		}
	}
	now := bs.clock.Now()
	fixes, err := bs.meta.FixRefcounts(ctx, ids, now, bs.cfg.BackstopGrace)
	if err != nil {
		return "", false, fmt.Errorf("sweep: backstop: %w", err)
	}
	var events []meta.Event
	for _, f := range fixes {
		if f.Orphaned {
			res.Orphaned++
			bs.metrics.GC.Orphaned.Inc()
		}
		if f.Refcount != f.Live {
			res.DriftFixed++
			bs.metrics.GC.DriftFixed.Inc()
			events = append(events, meta.Event{At: now, Kind: meta.EventRefcountDrift, Namespace: f.Namespace, BlobID: f.BlobID,
				Detail: fmt.Sprintf("state %s: refcount %d, live claims %d", f.State, f.Refcount, f.Live)})
		}
	}
	found, err := CheckObjects(ctx, bs.meta, bs.blobs, page)
	if err != nil {
		return "", false, err
	}
	events = append(events, bs.markFound(ctx, found, res, now)...)
	if err := bs.meta.AppendEvents(ctx, events); err != nil {
		return "", false, fmt.Errorf("sweep: backstop: %w", err)
	}
	return page[len(page)-1].ID, len(page) == bs.cfg.PageSize, nil
}

// WrongSize is a blob whose object exists with another size than the
// blob's stored size: truncated, or grown.
type WrongSize struct {
	Blob       meta.Blob `json:"blob"`
	ObjectSize int64     `json:"object_size"`
}

// Unreadable is a blob whose object the storage keeps answering with an
// error of its own while it answers other requests (ADR 0255).
type Unreadable struct {
	Blob   meta.Blob `json:"blob"`
	Detail string    `json:"detail"`
}

// Unchecked is a blob whose object could not be checked: the storage did
// not answer (an outage, a timeout). Nothing is known about the object;
// it is checked again later.
type Unchecked struct {
	Blob  meta.Blob `json:"blob"`
	Error string    `json:"error"`
}

// ObjectFinding is one object a backstop run found wrong, or could not
// check (Cause "unchecked").
type ObjectFinding struct {
	BlobID    string `json:"blob_id"`
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Cause     string `json:"cause"`
	Detail    string `json:"detail"`
}

// ObjectFindings are what the cheap checks of some blobs found.
type ObjectFindings struct {
	Missing    []meta.Blob
	WrongSize  []WrongSize
	Unreadable []Unreadable
	Unchecked  []Unchecked
}

// CheckObjects makes the cheap check (one Attributes call under the rule
// of ADR 0255, integrity.Attributes) of every blob of page that holds
// committed content, and returns what it found: objects missing, of
// another size than the stored size, unreadable, and the ones it could
// not check. It goes on past every object it cannot read; only a failure
// of the metadata store stops it. Each finding is re-checked against the
// reloaded row: a blob collected or repaired meanwhile is not reported.
func CheckObjects(ctx context.Context, m Store, b blob.Store, page []meta.Blob) (ObjectFindings, error) {
	var out ObjectFindings
	for _, bl := range page {
		// Without a digest the blob never held committed content: a
		// staging blob orphaned by an aborted put (its object may never
		// have been written) or by a dedup hit. Only committed content
		// can be missing.
		if !holdsContent(bl) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		a, f, err := integrity.Attributes(ctx, b, bl.Key)
		if err == nil && f.Cause == "" && a.Size == bl.StoredSize {
			continue
		}
		now, rerr := m.Blob(ctx, bl.ID)
		if rerr != nil {
			return out, fmt.Errorf("sweep: reload blob %s: %w", bl.ID, rerr)
		}
		if !holdsContent(now) || now.Key != bl.Key {
			continue
		}
		switch {
		case err != nil:
			out.Unchecked = append(out.Unchecked, Unchecked{Blob: now, Error: err.Error()})
		case f.Cause == meta.DamageMissing:
			out.Missing = append(out.Missing, now)
		case f.Cause != "":
			out.Unreadable = append(out.Unreadable, Unreadable{Blob: now, Detail: f.Detail})
		default:
			out.WrongSize = append(out.WrongSize, WrongSize{Blob: now, ObjectSize: a.Size})
		}
	}
	return out, nil
}

// markFound marks damaged what found holds and returns the events of the
// missing objects. An object that could not be checked (the storage did
// not answer) is kept for a check of its own at the start of the next
// run (retryUnchecked), so the pass moves on to the next page.
func (bs *Backstop) markFound(ctx context.Context, found ObjectFindings, res *BackstopResult, now time.Time) []meta.Event {
	var events []meta.Event
	note := func(b meta.Blob, cause, detail string) {
		res.Findings = append(res.Findings, ObjectFinding{BlobID: b.ID, Namespace: b.Namespace, Key: b.Key, Cause: cause, Detail: detail})
	}
	mark := func(b meta.Blob, f integrity.Finding) {
		note(b, f.Cause, f.Detail)
		if _, err := integrity.MarkDamaged(ctx, bs.meta, bs.metrics.GC.Damaged, bs.log, b, f, now); err != nil {
			// Found again by the next pass.
			bs.log.Warn("gc: could not mark a damaged blob; the next pass will", "blob", b.ID, "err", err)
		}
	}
	for _, b := range found.Missing {
		res.MissingObjects++
		bs.metrics.GC.MissingObjects.Inc()
		bs.log.Error("gc: a blob's object is missing; the row is kept", "blob", b.ID, "namespace", b.Namespace, "key", b.Key, "state", b.State)
		events = append(events, meta.Event{At: now, Kind: meta.EventObjectMissing, Namespace: b.Namespace, BlobID: b.ID,
			Detail: fmt.Sprintf("state %s, key %s: object not found", b.State, b.Key)})
		// Damaged from now on: dedup stops sharing it, and the next put
		// of its bytes repairs it (ADR 0095).
		mark(b, integrity.Finding{Cause: meta.DamageMissing, Detail: "object not found"})
	}
	for _, w := range found.WrongSize {
		mark(w.Blob, integrity.Finding{Cause: meta.DamageSize, Detail: fmt.Sprintf("object has %d bytes, stored size is %d", w.ObjectSize, w.Blob.StoredSize)})
	}
	for _, u := range found.Unreadable {
		res.Unreadable++
		mark(u.Blob, integrity.Finding{Cause: meta.DamageUnreadable, Detail: u.Detail})
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, u := range found.Unchecked {
		res.Unchecked++
		note(u.Blob, "unchecked", u.Error)
		bs.log.Warn("gc: could not check a blob's object; checking it again next run", "blob", u.Blob.ID, "key", u.Blob.Key, "err", u.Error)
		if bs.retry == nil {
			bs.retry = map[string]meta.Blob{}
		}
		if len(bs.retry) < maxRetryChecks {
			bs.retry[u.Blob.ID] = u.Blob
		}
	}
	return events
}

// maxRetryChecks bounds the objects kept for a check of their own: in an
// outage every object fails, and the next pass checks them all anyway.
const maxRetryChecks = 1000

// retryUnchecked checks again the objects a page could not check, before
// the run goes on from its cursor: a failed object is retried on its own
// schedule (every run), not by holding the pass on its page.
func (bs *Backstop) retryUnchecked(ctx context.Context, res *BackstopResult) error {
	bs.mu.Lock()
	page := make([]meta.Blob, 0, len(bs.retry))
	for _, b := range bs.retry {
		page = append(page, b)
	}
	bs.retry = nil
	bs.mu.Unlock()
	if len(page) == 0 {
		return nil
	}
	found, err := CheckObjects(ctx, bs.meta, bs.blobs, page)
	if err != nil {
		return err
	}
	return bs.meta.AppendEvents(ctx, bs.markFound(ctx, found, res, bs.clock.Now()))
}

// objectPage lists one page of the bucket after key after and collects
// debris: objects no live row owns, older than the grace period. The row
// of every object the put protocol writes exists before the object's
// first byte, so an object without a row is never an upload in progress;
// the age check also spares the temp files of writes in progress (the
// file backend's "<key>.<hex>.tmp", whose time moves while written).
func (bs *Backstop) objectPage(ctx context.Context, after string, res *BackstopResult) (string, bool, error) {
	now := bs.clock.Now()
	debris, next, listed, err := Debris(ctx, bs.meta, bs.blobs, after, bs.cfg.PageSize, now.Add(-bs.cfg.BackstopGrace), now.Add(-bs.cfg.TempGrace()))
	if err != nil {
		return "", false, err
	}
	res.ObjectsListed += listed
	if bs.sharedStorage(ctx) {
		return next, next != "", nil
	}
	var events []meta.Event
	for _, o := range debris {
		if err := bs.blobs.Delete(ctx, o.Key); err != nil {
			bs.log.Warn("gc: deleting debris failed; next pass retries", "key", o.Key, "err", err)
			continue
		}
		res.DebrisDeleted++
		res.DebrisBytes += o.Size
		bs.metrics.GC.DebrisDeleted.Inc()
		bs.metrics.BytesCollected.Add(float64(o.Size))
		events = append(events, meta.Event{At: now, Kind: meta.EventDebrisDeleted,
			Detail: fmt.Sprintf("key %s, %d bytes, modified %s", o.Key, o.Size, o.ModTime.UTC().Format(time.RFC3339))})
	}
	if err := bs.meta.AppendEvents(ctx, events); err != nil {
		return "", false, fmt.Errorf("sweep: backstop: %w", err)
	}
	return next, next != "", nil
}

// sharedStorage reports whether another store shares the storage on
// purpose (a sharer's marker is there, blob.IsSharerMarker): then objects
// without a row here may be that store's, and none is collected. Asked
// at every page (one listing of at most one key), so a store that starts
// sharing during a pass stops the collection at once.
func (bs *Backstop) sharedStorage(ctx context.Context) bool {
	objs, _, err := bs.blobs.List(ctx, blob.OwnerKey+".", "", 1)
	if errors.Is(err, blob.ErrNotFound) {
		return false // the file backend's directory does not exist yet
	}
	return err != nil || len(objs) > 0 // unknown: keep everything
}

// Debris lists one page of the bucket after key after and returns the
// objects that no live blob row owns and that were last modified before
// olderThan (temp files of writes, IsTempKey: before tempOlderThan), the
// token of the next page ("" at the end) and the number
// of objects listed. It changes nothing (fsck uses it too).
func Debris(ctx context.Context, m Store, b blob.Store, after string, pageSize int, olderThan, tempOlderThan time.Time) (debris []blob.Object, next string, listed int, err error) {
	objs, next, err := b.List(ctx, "", after, pageSize)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, "", 0, nil // the file backend's directory does not exist yet: nothing stored
	}
	if err != nil {
		return nil, "", 0, fmt.Errorf("sweep: list objects after %q: %w", after, err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	owners, err := m.BlobsByKeys(ctx, keys)
	if err != nil {
		return nil, "", 0, fmt.Errorf("sweep: look up object owners: %w", err)
	}
	listed = len(objs)
	for _, o := range objs {
		if blob.IsOwnerMarker(o.Key) {
			listed-- // a store's marker (internal/bucketsetup): not an object, never debris
			continue
		}
		before := olderThan
		if IsTempKey(o.Key) {
			before = tempOlderThan
		}
		if _, owned := owners[o.Key]; owned || !o.ModTime.Before(before) {
			continue
		}
		debris = append(debris, o)
	}
	return debris, next, listed, nil
}

func formatCursor(phase string, at time.Time, pos string) string {
	return phase + ":" + strconv.FormatInt(at.UnixNano(), 10) + ":" + pos
}

// parseCursor splits a cursor; an unreadable one starts a new pass.
func parseCursor(s string) (phase string, at time.Time, pos string) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return "", time.Time{}, ""
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", time.Time{}, ""
	}
	return parts[0], time.Unix(0, n), parts[2]
}

// GCMetrics are the garbage collector's instruments beyond the collection
// counters of Metrics.
type GCMetrics struct {
	Candidates     prometheus.Counter // blobs taken for deletion after re-confirmation
	DriftFixed     prometheus.Counter // refcount hints repaired by the backstop
	Orphaned       prometheus.Counter // committed blobs without a claim, orphaned by the backstop
	MissingObjects prometheus.Counter // blob rows whose object is missing
	DebrisDeleted  prometheus.Counter // objects without a row, deleted
	Passes         prometheus.Counter // backstop passes finished

	// Integrity (scrub.go, ADR 0095).
	Damaged     *prometheus.CounterVec // blobs marked damaged, by cause
	Repaired    prometheus.Counter     // damaged blobs repaired by a put of their bytes
	ScrubBytes  prometheus.Counter     // object bytes read and verified by the scrub
	ScrubBlobs  prometheus.Counter     // blobs verified by the scrub
	ScrubPasses prometheus.Counter     // scrub passes finished
}

func newGCMetrics(reg prometheus.Registerer) *GCMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &GCMetrics{
		Candidates:     c("claimcheck_gc_candidates_total", "Blobs moved to deleting after the grace period and the re-check that no live claim references them."),
		DriftFixed:     c("claimcheck_gc_refcount_drift_fixed_total", "Refcount hints repaired by the backstop."),
		Orphaned:       c("claimcheck_gc_backstop_orphaned_total", "Committed blobs without a live claim that the backstop orphaned."),
		MissingObjects: c("claimcheck_gc_missing_objects_total", "Blob rows found by the backstop whose object does not exist (rows are kept)."),
		DebrisDeleted:  c("claimcheck_gc_debris_deleted_total", "Objects without a blob row, older than the grace period, deleted by the backstop."),
		Passes:         c("claimcheck_gc_backstop_passes_total", "Backstop passes finished."),
	}
	m.Damaged = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_blobs_damaged_total",
		Help: "Blobs marked damaged (object altered, short or missing), by cause; a put of the same bytes repairs them."}, []string{"cause"})
	// Every cause exported from the start (at 0), so an alert on an
	// increase sees the first damage.
	for _, cause := range []string{meta.DamageChecksum, meta.DamageSize, meta.DamageMissing, meta.DamageUnreadable} {
		m.Damaged.WithLabelValues(cause)
	}
	m.Repaired = c("claimcheck_blobs_repaired_total", "Damaged blobs repaired by a put that brought their bytes.")
	m.ScrubBytes = c("claimcheck_scrub_bytes_total", "Object bytes read and verified by the scrub.")
	m.ScrubBlobs = c("claimcheck_scrub_blobs_total", "Blobs whose object the scrub read and verified.")
	m.ScrubPasses = c("claimcheck_scrub_passes_total", "Scrub passes over every blob finished.")
	if reg != nil {
		reg.MustRegister(m.Candidates, m.DriftFixed, m.Orphaned, m.MissingObjects, m.DebrisDeleted, m.Passes,
			m.Damaged, m.Repaired, m.ScrubBytes, m.ScrubBlobs, m.ScrubPasses)
	}
	return m
}

// Backstop returns the sweeper's backstop (for `claimcheck gc` and tests).
func (s *Sweeper) Backstop() *Backstop { return s.backstop }

// tickBackstop runs the backstop from the background loop: only while the
// store is idle (the maintenance rule of the sweeper), a bounded number of
// pages per tick, so a long pass spreads over many ticks and traffic is
// never starved.
func (s *Sweeper) tickBackstop(ctx context.Context) {
	if s.cfg.BackstopInterval < 0 {
		return
	}
	now := s.clock.Now()
	if now.Sub(s.idleSince()) < s.cfg.IdleGrace {
		return
	}
	due, err := s.backstop.Due(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("sweep: reading the backstop's cursor failed; retrying next tick", "err", err)
		}
		return
	}
	if !due {
		return
	}
	pages := max(1, s.cfg.MaxOpsPerRun/max(1, s.cfg.PageSize))
	ctx, span := s.tracer.Start(ctx, spanBackstop)
	res, err := s.backstop.Run(ctx, pages)
	endBackstop(span, res, err)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: backstop page failed; retrying next tick", "err", err)
	}
}
