package sqlmeta

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Folding a compacted claim's events into its tombstone, and reading
// them back (ADR 0266; the encoding is in trail.go).

// addTrailColumn adds claim_tombstones.trail in each database's type for
// bytes (0057_tombstone_trails.sql). Existing tombstones get an empty
// trail: their events stay rows.
func addTrailColumn(q *txq) error {
	typ := `BLOB NOT NULL DEFAULT x''`
	if q.d.dayPartitions {
		typ = `BYTEA NOT NULL DEFAULT ''::bytea`
	}
	_, err := q.exec(`ALTER TABLE claim_tombstones ADD COLUMN trail ` + typ)
	return err
}

// trailSlack bounds how far past its finish a compacted claim's last
// event may be for its events to be folded (a claim with a later one
// keeps them as rows). Its events are numbered from their times, which
// are no later than the finish but for a read receipt written after
// it, moved past them only on a collision (audit.go); the bound lets a
// listing on PostgreSQL read only the day partitions of tombstones that
// finished after its cursor less trailSlack.
const trailSlack = int64(time.Hour)

// The two cursors rows the trails keep: the largest last_seq of any
// trail, under which a listing need not look at trails at all (the head
// of the log, where live listings and the event feed read), and the cut
// of the last events prune, which trail events older than it are no
// longer served past.
const (
	cursorTrailTop    = "trail_top"
	cursorEventsPrune = "events_pruned"
)

// foldedTombstone is what CompactHistory writes of a finished claim.
type foldedTombstone struct {
	trail             []byte
	first, last, span int64
}

// foldTrails reads the events of the finished claims of page and encodes
// each claim's own events (of its namespace, without a tenant) into its
// trail; keys are the (namespace, seq) of the rows folded, which the
// caller deletes in the same transaction. top is the largest last seq.
func (q *txq) foldTrails(page []finishedClaim) (folded map[string]foldedTombstone, keys []any, top trailTop, err error) {
	ids := make([]string, len(page))
	from, to := int64(math.MaxInt64), int64(0)
	for i, f := range page {
		ids[i] = f.id
		from, to = min(from, f.created), max(to, f.at)
	}
	byID := make(map[string][]meta.Event, len(page))
	if err := chunks(ids, func(part []string) error {
		// A claim's events are numbered from times between its creation
		// and its finish (a collision moves a seq up, by less than
		// trailSlack): bounding seq lets PostgreSQL read only the day
		// partitions of the page's claims. An event outside (a number
		// from before time-derived seqs) stays a row, read as before.
		evs, err := q.events(`WHERE claim_id IN (`+placeholders(len(part))+`) AND claim_id <> '' AND seq >= ? AND seq < ? ORDER BY seq`,
			append(anys(part), from, to+trailSlack)...)
		for _, e := range evs {
			byID[e.ClaimID] = append(byID[e.ClaimID], e)
		}
		return err
	}); err != nil {
		return nil, nil, trailTop{}, err
	}
	folded = make(map[string]foldedTombstone, len(page))
	for _, f := range page {
		evs := slices.DeleteFunc(byID[f.id], func(e meta.Event) bool { return e.Namespace != f.namespace || e.Tenant != "" })
		if len(evs) == 0 || evs[len(evs)-1].Seq >= f.at+trailSlack || evs[0].Seq <= 0 {
			continue
		}
		first, last := evs[0].Seq, evs[len(evs)-1].Seq
		folded[f.id] = foldedTombstone{trail: encodeTrail(evs), first: first, last: last, span: int64(trailSpan(first, last))}
		for _, e := range evs {
			keys = append(keys, e.Namespace, e.Seq)
		}
		top.seq = max(top.seq, last)
		top.classes |= 1 << trailSpan(first, last)
	}
	return folded, keys, top, nil
}

// trailTop is what the cursors row trail_top records of the trails: the
// largest last_seq, and the span classes in use (bit c for class c), so
// that a listing reads the index ranges of those classes only.
type trailTop struct {
	seq     int64
	classes uint64
}

// raiseTrailTop records that trails now reach top.seq and use
// top.classes.
func (q *txq) raiseTrailTop(top trailTop) error {
	if top.seq == 0 {
		return nil
	}
	cur, _, err := q.trailCursors()
	if err != nil || (cur.seq >= top.seq && cur.classes|top.classes == cur.classes) {
		return err
	}
	_, err = q.exec(`INSERT INTO cursors (name, value) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, cursorTrailTop,
		strconv.FormatInt(max(cur.seq, top.seq), 10)+" "+strconv.FormatUint(cur.classes|top.classes, 10))
	return err
}

// prunedCut is the cut of the last events prune: events with seq below
// seq and a time before at are gone from the rows, and are not served
// from a trail either.
type prunedCut struct{ seq, at int64 }

func (p prunedCut) gone(e meta.Event) bool { return e.Seq < p.seq && e.At.UnixNano() < p.at }

// trailCursors reads the trails' top and the last events prune cut.
func (q *txq) trailCursors() (top trailTop, pruned prunedCut, err error) {
	rows, err := q.query(`SELECT name, value FROM cursors WHERE name IN (?, ?)`, cursorTrailTop, cursorEventsPrune)
	if err != nil {
		return trailTop{}, prunedCut{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, v string
		if err := rows.Scan(&name, &v); err != nil {
			return trailTop{}, prunedCut{}, err
		}
		switch name {
		case cursorTrailTop:
			s, c, _ := strings.Cut(v, " ")
			top.seq, _ = strconv.ParseInt(s, 10, 64)
			top.classes, _ = strconv.ParseUint(c, 10, 64)
		case cursorEventsPrune:
			s, a, _ := strings.Cut(v, " ")
			pruned.seq, _ = strconv.ParseInt(s, 10, 64)
			pruned.at, _ = strconv.ParseInt(a, 10, 64)
		}
	}
	return top, pruned, rows.Err()
}

// recordEventsPrune keeps the cut of an events prune (rows with seq
// below seq and a time before at went), raising the one recorded.
func (q *txq) recordEventsPrune(seq, at int64) error {
	_, cur, err := q.trailCursors()
	if err != nil || (cur.seq >= seq && cur.at >= at) {
		return err
	}
	_, err = q.exec(`INSERT INTO cursors (name, value) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, cursorEventsPrune,
		strconv.FormatInt(max(seq, cur.seq), 10)+" "+strconv.FormatInt(max(at, cur.at), 10))
	return err
}

// deleteEventKeys deletes the events named by keys, (namespace, seq)
// pairs: seq is unique within a namespace (events_days.go).
func (q *txq) deleteEventKeys(keys []any) error {
	for len(keys) > 0 {
		n := min(len(keys)/2, eventChunk)
		if _, err := q.exec(`DELETE FROM events WHERE (namespace = ? AND seq = ?)`+
			strings.Repeat(" OR (namespace = ? AND seq = ?)", n-1), keys[:2*n]...); err != nil {
			return err
		}
		keys = keys[2*n:]
	}
	return nil
}

// claimTrail returns the events of claim id's trail with seq > after.
func (q *txq) claimTrail(id string, after int64) ([]meta.Event, error) {
	var (
		ns    string
		first int64
		trail []byte
	)
	err := q.queryRow(`SELECT namespace, first_seq, trail FROM claim_tombstones WHERE id = ?`, id).Scan(&ns, &first, &trail)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	evs, err := decodeTrail(trail, id, ns, first)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	_, pruned, err := q.trailCursors()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(evs, func(e meta.Event) bool { return e.Seq <= after || pruned.gone(e) }), nil
}

// stabTrails returns the events with seq in (after, bound] of the trails
// of namespace ("" for every namespace), bound <= upTo being as far as
// they are complete: every trail with an event in (after, bound] was
// read. It reads up to limit trails starting after after per span class.
//
// A trail of span class c spans less than 2^(c+30) ns (trailSpan), so one
// with an event after after and starting at or before it started after
// after-2^(c+30): the trails spanning the cursor are read whole, per
// class, through the index on (namespace, span_class, first_seq), and
// their number is the number of the namespace's claims of that class
// live around the cursor. The trails starting in (after, upTo] are read
// in first_seq order, limit per class; a class that has more lowers the
// bound to the last first_seq read (with every trail of the class that
// starts at it). On PostgreSQL finished_at > after - trailSlack keeps
// the read to the day partitions that can hold such trails.
func (q *txq) stabTrails(namespace string, after, upTo int64, limit int, top trailTop, pruned prunedCut) ([]meta.Event, int64, error) {
	if after >= top.seq || after >= upTo {
		return nil, upTo, nil
	}
	nsWhere, nsArgs := ``, []any{}
	if namespace != "" {
		nsWhere, nsArgs = `namespace = ? AND `, []any{namespace}
	}
	const cols = `SELECT id, namespace, span_class, first_seq, trail FROM claim_tombstones WHERE `
	finishedAfter := satSub(after, trailSlack)
	var parts []string
	var args []any
	classes := make([]int, 0, maxTrailSpan+1)
	for c := range maxTrailSpan + 1 {
		if top.classes&(1<<c) != 0 {
			classes = append(classes, c)
		}
	}
	for _, c := range classes {
		parts = append(parts, cols+nsWhere+`span_class = ? AND first_seq > ? AND first_seq <= ? AND last_seq > ? AND finished_at > ?`)
		args = append(append(args, nsArgs...), c, spanStart(after, c), after, after, finishedAfter)
	}
	for _, c := range classes {
		parts = append(parts, `SELECT * FROM (`+cols+nsWhere+`span_class = ? AND first_seq > ? AND first_seq <= ? AND finished_at > ?
			ORDER BY first_seq LIMIT ?) AS s`+strconv.Itoa(c))
		args = append(append(args, nsArgs...), c, after, upTo, finishedAfter, limit)
	}
	type tomb struct {
		id, namespace string
		first         int64
		trail         []byte
	}
	var tombs []tomb
	starting := make([]int, maxTrailSpan+1)
	lastFirst := make([]int64, maxTrailSpan+1)
	read := func(query string, args ...any) error {
		rows, err := q.query(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t tomb
			var c int
			if err := rows.Scan(&t.id, &t.namespace, &c, &t.first, &t.trail); err != nil {
				return err
			}
			if t.first > after && c >= 0 && c <= maxTrailSpan {
				starting[c]++
				lastFirst[c] = max(lastFirst[c], t.first)
			}
			tombs = append(tombs, t)
		}
		return rows.Err()
	}
	if err := read(strings.Join(parts, ` UNION ALL `), args...); err != nil {
		return nil, 0, err
	}
	bound := upTo
	for c, n := range starting {
		if n < limit {
			continue
		}
		// More of this class may start after the last one read; those
		// starting at the same seq (other namespaces) are read too.
		f := lastFirst[c]
		if err := read(cols+nsWhere+`span_class = ? AND first_seq = ?`, append(slices.Clone(nsArgs), c, f)...); err != nil {
			return nil, 0, err
		}
		bound = min(bound, f)
	}
	seen := make(map[string]bool, len(tombs))
	var out []meta.Event
	for _, t := range tombs {
		if seen[t.namespace+"\x00"+t.id] {
			continue
		}
		seen[t.namespace+"\x00"+t.id] = true
		evs, err := decodeTrail(t.trail, t.id, t.namespace, t.first)
		if err != nil {
			return nil, 0, fmt.Errorf("tombstone %s: %w", t.id, err)
		}
		for _, e := range evs {
			if e.Seq > after && e.Seq <= bound && !pruned.gone(e) {
				out = append(out, e)
			}
		}
	}
	return out, bound, nil
}

// spanStart is after - 2^(c+30), the earliest first_seq a trail of span
// class c reaching past after can have, or the smallest int64.
func spanStart(after int64, c int) int64 {
	if c+30 >= 63 {
		return math.MinInt64
	}
	return satSub(after, int64(1)<<(c+30))
}

// satSub is a-b (b >= 0), or the smallest int64 where that would
// overflow.
func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// pageWithTrails is a page of up to limit events with seq > after, up to
// upTo, from rows and trails merged by seq: rows reads a page of rows
// (in seq order, limit of them, seq <= upTo), keep filters the events of
// trails as rows filters its own (nil keeps all). The page is full
// unless the listing ends: a client stops at a short page. With
// namespace "", the page may end between two events of one seq only if
// it is all one seq; the caller applies endBetweenSeqs.
func (q *txq) pageWithTrails(namespace string, after, upTo int64, limit int,
	rows func(after int64) ([]meta.Event, error), keep func(meta.Event) bool) ([]meta.Event, error) {
	var out []meta.Event
	for {
		// Rows first, trails after: a compaction committing between the
		// two (SQLite reads without one snapshot) moves events from rows
		// to a trail, so they are read twice, never missed, and the
		// merge drops the second copy.
		rs, err := rows(after)
		if err != nil {
			return nil, err
		}
		bound := upTo
		if len(rs) >= limit && len(rs) > 0 {
			// Complete up to the last seq of a full page, or, where
			// other namespaces may share it, up to the one before.
			bound = rs[len(rs)-1].Seq
			if namespace == "" && rs[0].Seq < bound {
				bound--
			}
		}
		top, pruned, err := q.trailCursors()
		if err != nil {
			return nil, err
		}
		ts, tb, err := q.stabTrails(namespace, after, bound, limit, top, pruned)
		if err != nil {
			return nil, err
		}
		bound = min(bound, tb)
		// Every event in (after, bound] is in rs or ts.
		got := slices.DeleteFunc(rs, func(e meta.Event) bool { return e.Seq > bound })
		if len(ts) > 0 {
			have := make(map[string]bool, len(got))
			for _, e := range got {
				have[eventKey(e)] = true
			}
			for _, e := range ts {
				if !have[eventKey(e)] && (keep == nil || keep(e)) {
					got = append(got, e)
				}
			}
			slices.SortStableFunc(got, func(a, b meta.Event) int {
				return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Namespace, b.Namespace))
			})
		}
		out = append(out, got...)
		if len(out) >= limit {
			return out[:limit], nil
		}
		if bound >= upTo {
			return out, nil
		}
		// Short of a page up to bound (filters, or trails read up to a
		// class's last): carry on after it.
		after = bound
	}
}

func eventKey(e meta.Event) string { return e.Namespace + "\x00" + strconv.FormatInt(e.Seq, 10) }

// mergeClaimTrail adds the events of claim id's trail after after to
// rows, a page of its event rows, and keeps the first limit by seq.
func (q *txq) mergeClaimTrail(id string, after int64, limit int, rs []meta.Event) ([]meta.Event, error) {
	ts, err := q.claimTrail(id, after)
	if err != nil || len(ts) == 0 {
		return rs, err
	}
	have := make(map[string]bool, len(rs))
	for _, e := range rs {
		have[eventKey(e)] = true
	}
	for _, e := range ts {
		if !have[eventKey(e)] {
			rs = append(rs, e)
		}
	}
	slices.SortStableFunc(rs, func(a, b meta.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(rs) > limit {
		rs = rs[:limit]
	}
	return rs, nil
}
