package sqlmeta

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// trailSample is a claim's life with every field the trail encodes: each
// known string, literals, empty strings, a repeated blob and actor, a seq
// moved past its time, and equal and far apart seqs.
func trailSample() []meta.Event {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	ev := func(seq int64, moved int64, kind, blob, detail, actor, reason string) meta.Event {
		return meta.Event{Seq: seq, At: time.Unix(0, seq-moved).UTC(), Kind: kind, Namespace: "orders", ClaimID: "cc_1",
			BlobID: blob, Detail: detail, Actor: actor, Reason: reason}
	}
	base := at.UnixNano()
	out := []meta.Event{
		ev(base, 0, meta.EventCreated, "b_1", "dedup", "key_0123456789", ""),
		ev(base+1, 1, meta.EventConfirmed, "b_1", "", "key_0123456789", ""),
		ev(base+int64(time.Second), 0, meta.EventRedeemed, "", "", "key_other", ""),
		ev(base+int64(time.Second)+1, 0, meta.EventFirstRedeemed, "", "", "key_other", ""),
		ev(base+int64(2*time.Second), -5, meta.EventReleased, "b_1", "billing", "key_é", ""),
		ev(base+int64(2*time.Second)+1, 0, meta.EventAllReleased, "b_1", "", "key_é", ""),
		ev(base+int64(30*24*time.Hour), 0, meta.EventExpired, "b_1", "", meta.ActorSweeper, meta.ReasonExpired),
		ev(base+int64(30*24*time.Hour)+1, 0, meta.EventExpiredUnread, "b_1", "", meta.ActorSweeper, meta.ReasonExpired),
		ev(base+int64(30*24*time.Hour)+2, 0, "a_kind_not_in_the_table", "b_2", strings.Repeat("x", 300), "", "custom"),
		ev(base+int64(30*24*time.Hour)+3, 0, meta.EventDeleted, "", "", "", meta.ReasonReadRetention),
	}
	for _, k := range trailStrings {
		out = append(out, ev(out[len(out)-1].Seq+7, 0, k, k, k, k, k))
	}
	return out
}

// TestTrailRoundTrip: decoding a trail gives back every event exactly,
// with the tombstone's claim id and namespace.
func TestTrailRoundTrip(t *testing.T) {
	in := trailSample()
	b := encodeTrail(in)
	out, err := decodeTrail(b, "cc_1", "orders", in[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		for i := range min(len(in), len(out)) {
			if !reflect.DeepEqual(in[i], out[i]) {
				t.Errorf("event %d: got %+v, want %+v", i, out[i], in[i])
			}
		}
		t.Fatalf("decoded %d events, want %d", len(out), len(in))
	}
	if evs, err := decodeTrail(nil, "cc_1", "orders", 0); err != nil || len(evs) != 0 {
		t.Errorf("empty trail = %v, %v; want no events", evs, err)
	}
	if evs, err := decodeTrail(encodeTrail(nil), "cc_1", "orders", 0); err != nil || len(evs) != 0 {
		t.Errorf("trail of no events = %v, %v; want no events", evs, err)
	}
	// A typical life (created, redeemed, first_redeemed, expired) with a
	// 27-byte blob id and a 14-byte key id fits in a few dozen bytes.
	life := []meta.Event{in[0], in[2], in[3], in[6]}
	life[1].BlobID, life[2].BlobID = "b_1", "b_1"
	if n := len(encodeTrail(life)); n > 80 {
		t.Errorf("a claim's life encodes to %d bytes, want at most 80", n)
	}
	// Every truncation of a trail is refused, not read short.
	for i := 1; i < len(b); i++ {
		if _, err := decodeTrail(b[:i], "cc_1", "orders", in[0].Seq); err == nil {
			t.Fatalf("a trail cut to %d of %d bytes decoded without an error", i, len(b))
		}
	}
	if _, err := decodeTrail(append([]byte{2}, b[1:]...), "cc_1", "orders", in[0].Seq); err == nil {
		t.Error("a trail of an unknown version decoded without an error")
	}
}

func TestTrailSpan(t *testing.T) {
	for _, c := range []struct {
		span int64
		want int
	}{{0, 0}, {1<<30 - 1, 0}, {1 << 30, 1}, {1<<31 - 1, 1}, {1 << 31, 2}, {1<<63 - 1, maxTrailSpan}} {
		if got := trailSpan(0, c.span); got != c.want {
			t.Errorf("trailSpan(0, %d) = %d, want %d", c.span, got, c.want)
		}
		if uint64(c.span) >= uint64(1)<<(c.want+30) {
			t.Errorf("span %d is not below 2^(%d+30)", c.span, c.want)
		}
	}
}

// FuzzTrail: whatever the bytes, decoding does not panic, and the events
// of a trail that decodes encode to a trail that decodes to them.
func FuzzTrail(f *testing.F) {
	f.Add(encodeTrail(trailSample()), int64(0))
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0}, int64(5))
	f.Fuzz(func(t *testing.T, b []byte, first int64) {
		evs, err := decodeTrail(b, "cc_1", "ns", first)
		if err != nil || len(evs) == 0 {
			return
		}
		again, err := decodeTrail(encodeTrail(evs), "cc_1", "ns", evs[0].Seq)
		if err != nil || !reflect.DeepEqual(evs, again) {
			t.Fatalf("re-encoded trail = %+v, %v; want %+v", again, err, evs)
		}
	})
}

func TestSpanStart(t *testing.T) {
	for _, c := range []struct {
		after int64
		class int
		want  int64
	}{
		{1 << 40, 0, 1<<40 - 1<<30},
		{0, 3, -(1 << 33)},
		{5, maxTrailSpan, math.MinInt64},
		{math.MinInt64 + 5, 2, math.MinInt64},
	} {
		if got := spanStart(c.after, c.class); got != c.want {
			t.Errorf("spanStart(%d, %d) = %d, want %d", c.after, c.class, got, c.want)
		}
	}
}
