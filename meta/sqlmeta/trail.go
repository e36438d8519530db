package sqlmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Trails (ADR 0266): the audit events of a compacted claim, folded into
// its tombstone.
//
// A compacted claim's events are no longer rows of events: each row cost
// a tuple header, a line pointer and several index entries, more than the
// whole of what a finished claim may keep. CompactHistory encodes them
// into the tombstone's trail column and deletes the rows in the same
// transaction; the listings read rows and trails and merge them by seq.
//
// The encoding, version 1:
//
//	trail  = version(1) count:uvarint event*
//	event  = seqDelta:uvarint atDelta:varint kind blob detail actor reason
//	string = uvarint v: 0 the previous event's value of the field ("" for
//	         the first event); odd, the known string (v-1)/2 of
//	         trailStrings; even, a literal of v/2-1 bytes that follow.
//
// seqDelta is the seq less the previous event's (the first event's less
// the tombstone's first_seq), so the events are in seq order; atDelta is
// the seq less the event's time in nanoseconds (0 unless a collision
// moved the seq). The claim id and namespace are the tombstone's, and
// only events without a tenant are folded (a claim's own events; an
// administrative event stays a row, read by TenantEvents as before).

// trailVersion is the first byte of every trail this code writes.
const trailVersion = 1

// trailStrings are the strings a trail writes as a one-byte code: the
// event kinds of a claim's life, the finishing reasons and the actor of
// the sweeper. The list is part of the format: entries are only ever
// appended (a new entry is a literal to an older reader, which is why a
// new one needs a new version).
var trailStrings = [...]string{
	"created", "redeemed", "released", "expired", "deleted", "reaped",
	"all_released", "expired_unread", "confirmed", "first_redeemed",
	"read_retention_over", "never_confirmed", "aborted", "key_destroyed",
	"sweeper", "dedup", "hold_set", "hold_cleared",
}

var trailCodes = func() map[string]uint64 {
	m := make(map[string]uint64, len(trailStrings))
	for i, s := range trailStrings {
		m[s] = uint64(i)
	}
	return m
}()

// trailSpan sorts a trail by how long it spans, in units of 2^30 ns
// (about a second): the bit length of (last-first)>>30, 0 to 33. For
// span class c every trail spans less than 2^(c+30) ns, which bounds how
// far before a seq window a trail that reaches into it can start
// (stabTrails).
func trailSpan(first, last int64) int {
	return bits.Len64(uint64(last-first) >> 30)
}

// maxTrailSpan is the largest span class: a span below 2^63 ns.
const maxTrailSpan = 33

// encodeTrail encodes events, in seq order, all of one claim and
// namespace and without a tenant.
func encodeTrail(events []meta.Event) []byte {
	b := make([]byte, 0, 16+24*len(events))
	b = append(b, trailVersion)
	b = binary.AppendUvarint(b, uint64(len(events)))
	var prev meta.Event
	prevSeq := int64(0)
	if len(events) > 0 {
		prevSeq = events[0].Seq
	}
	for _, e := range events {
		b = binary.AppendUvarint(b, uint64(e.Seq-prevSeq))
		b = binary.AppendVarint(b, e.Seq-e.At.UnixNano())
		b = appendTrailString(b, e.Kind, prev.Kind)
		b = appendTrailString(b, e.BlobID, prev.BlobID)
		b = appendTrailString(b, e.Detail, prev.Detail)
		b = appendTrailString(b, e.Actor, prev.Actor)
		b = appendTrailString(b, e.Reason, prev.Reason)
		prev, prevSeq = e, e.Seq
	}
	return b
}

func appendTrailString(b []byte, s, prev string) []byte {
	if s == prev {
		return append(b, 0)
	}
	if code, ok := trailCodes[s]; ok {
		return binary.AppendUvarint(b, 2*code+1)
	}
	b = binary.AppendUvarint(b, 2*uint64(len(s))+2)
	return append(b, s...)
}

var errTrail = errors.New("trail: malformed")

// decodeTrail decodes the trail of the tombstone of claim id in
// namespace whose first event has seq firstSeq. An empty trail (a
// tombstone compacted before trails, or whose claim had no events left)
// has no events.
func decodeTrail(b []byte, id, namespace string, firstSeq int64) ([]meta.Event, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != trailVersion {
		return nil, fmt.Errorf("%w: version %d", errTrail, b[0])
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	// Every event takes at least 7 bytes, so a count past the bytes left
	// is malformed: a bound before anything is allocated from it.
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: count", errTrail)
	}
	b = b[k:]
	out := make([]meta.Event, 0, n)
	var prev meta.Event
	seq := firstSeq
	for range n {
		d, k := binary.Uvarint(b)
		if k <= 0 || d > 1<<63-1 {
			return nil, fmt.Errorf("%w: seq", errTrail)
		}
		b = b[k:]
		seq += int64(d)
		at, k := binary.Varint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: time", errTrail)
		}
		b = b[k:]
		e := meta.Event{Seq: seq, At: time.Unix(0, seq-at).UTC(), Namespace: namespace, ClaimID: id}
		for _, f := range []struct{ dst, prev *string }{
			{&e.Kind, &prev.Kind}, {&e.BlobID, &prev.BlobID}, {&e.Detail, &prev.Detail},
			{&e.Actor, &prev.Actor}, {&e.Reason, &prev.Reason},
		} {
			var err error
			if *f.dst, b, err = readTrailString(b, *f.prev); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
		prev = e
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes past the last event", errTrail, len(b))
	}
	return out, nil
}

func readTrailString(b []byte, prev string) (string, []byte, error) {
	v, k := binary.Uvarint(b)
	if k <= 0 {
		return "", nil, fmt.Errorf("%w: string", errTrail)
	}
	b = b[k:]
	switch {
	case v == 0:
		return prev, b, nil
	case v%2 == 1:
		if i := (v - 1) / 2; i < uint64(len(trailStrings)) {
			return trailStrings[i], b, nil
		}
		return "", nil, fmt.Errorf("%w: string code %d", errTrail, (v-1)/2)
	}
	n := v/2 - 1
	if n > uint64(len(b)) {
		return "", nil, fmt.Errorf("%w: string of %d bytes", errTrail, n)
	}
	return string(b[:n]), b[n:], nil
}
