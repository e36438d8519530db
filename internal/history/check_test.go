package history_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/internal/history"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// hist writes a hand-made history: each call is an invocation at its
// time in seconds after t0 and a completion a second later.
type hist struct{ evs []history.Event }

func (h *hist) call(at int, inv, done history.Event) {
	seq := int64(len(h.evs) + 1)
	inv.Seq, inv.Phase, inv.Time = seq, history.PhaseInvoke, t0.Add(time.Duration(at)*time.Second)
	h.evs = append(h.evs, inv)
	if done.Phase == "" {
		return // no answer came
	}
	done.Seq, done.Of, done.Op, done.Time = seq+1, seq, inv.Op, inv.Time.Add(time.Second)
	h.evs = append(h.evs, done)
}

var ok = history.Event{Phase: history.PhaseOK}

func fail(class string) history.Event { return history.Event{Phase: history.PhaseFail, Error: class} }

// put acknowledges claim id (bytes dA, 100 bytes) expiring at exp
// seconds after t0, with a read window of window seconds (0: none).
func (h *hist) put(at int, id string, exp, window int) {
	h.call(at, history.Event{Op: history.OpPut, NS: "ns", Digest: dA, Size: 100},
		history.Event{Phase: history.PhaseOK, NS: "ns", ID: id, Digest: dA, Size: 100,
			ExpiresAt: t0.Add(time.Duration(exp) * time.Second), ReadWindow: time.Duration(window) * time.Second})
}

func (h *hist) redeem(at int, id string, done history.Event) {
	h.call(at, history.Event{Op: history.OpRedeem, NS: "ns", ID: id}, done)
}

func (h *hist) op(at int, op, id string, done history.Event) {
	h.call(at, history.Event{Op: op, NS: "ns", ID: id}, done)
}

func (h *hist) usage(at int, claims, bytes int64) {
	h.call(at, history.Event{Op: history.OpUsage, NS: "ns"}, history.Event{Phase: history.PhaseOK, ActiveClaims: claims, UsedBytes: bytes})
}

// inventory records the store's inventory at seconds after t0; the
// oldest reclaimable blob finished oldest seconds after t0 (-1: none).
func (h *hist) inventory(at int, inv history.Inventory, oldest int) {
	if oldest >= 0 {
		inv.OldestReclaim = t0.Add(time.Duration(oldest) * time.Second)
	}
	h.call(at, history.Event{Op: history.OpInventory}, history.Event{Phase: history.PhaseOK, Inventory: &inv})
}

func read(digest string) history.Event { return history.Event{Phase: history.PhaseOK, Digest: digest} }

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		want  []string // violation kinds, in order
	}{
		{"good: redeemed until the end, gone after it", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.redeem(10, "c1", read(dA))
			h.redeem(200, "c1", fail("expired"))
			h.usage(20, 1, 100)
		}, nil},
		{"lost: gone before max_age", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.redeem(10, "c1", fail("gone"))
		}, []string{history.KindLost}},
		{"wrong bytes", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.redeem(10, "c1", read(dB))
		}, []string{history.KindBytes}},
		{"late: redeemed after max_age", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.redeem(150, "c1", read(dA))
		}, []string{history.KindLate}},
		{"good: an extension moves the end", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.op(50, history.OpExtend, "c1", history.Event{Phase: history.PhaseOK, ExpiresAt: t0.Add(300 * time.Second)})
			h.redeem(150, "c1", read(dA))
		}, nil},
		{"good: a hold keeps it past max_age", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.op(50, history.OpHold, "c1", ok)
			h.redeem(150, "c1", read(dA))
		}, nil},
		{"late: redeemed after its delete", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.op(10, history.OpDelete, "c1", ok)
			h.redeem(20, "c1", read(dA))
		}, []string{history.KindLate}},
		{"late: redeemed after the delete-after-read window", func(h *hist) {
			h.put(0, "c1", 1000, 30)
			h.redeem(10, "c1", read(dA))
			h.redeem(60, "c1", read(dA))
		}, []string{history.KindLate}},
		{"good: a release restarts the window", func(h *hist) {
			h.put(0, "c1", 1000, 30)
			h.redeem(10, "c1", read(dA))
			h.op(35, history.OpRelease, "c1", ok)
			h.redeem(60, "c1", read(dA))
		}, nil},
		{"good: gone in the window after the first read", func(h *hist) {
			h.put(0, "c1", 1000, 30)
			h.redeem(10, "c1", read(dA))
			h.redeem(45, "c1", fail("gone"))
		}, nil},
		{"quota: usage below the live set", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.put(2, "c2", 100, 0)
			h.usage(10, 1, 100)
		}, []string{history.KindQuota}},
		{"quota: usage counting a deleted claim", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.op(2, history.OpDelete, "c1", ok)
			h.usage(10, 1, 100)
		}, []string{history.KindQuota}},
		{"good: a put without an answer may count", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.call(2, history.Event{Op: history.OpPut, NS: "ns", Digest: dA, Size: 100}, fail("unavailable"))
			h.usage(10, 2, 200)
			h.usage(12, 1, 100)
		}, nil},
		{"good: an inventory with a blob waiting within the bound", func(h *hist) {
			h.put(0, "c1", 100, 0)
			h.inventory(200, history.Inventory{Reclaim: 1}, 190)
		}, nil},
		{"unowned: an object no blob owns", func(h *hist) {
			h.inventory(200, history.Inventory{Unowned: 2}, -1)
		}, []string{history.KindUnowned}},
		{"missing: a blob without its object", func(h *hist) {
			h.inventory(200, history.Inventory{Missing: 1}, -1)
		}, []string{history.KindMissing}},
		{"quota: counters that drifted from the live claims", func(h *hist) {
			h.inventory(200, history.Inventory{QuotaDrift: 1}, -1)
		}, []string{history.KindQuota}},
		{"outlived: an object kept past the backstop bound", func(h *hist) {
			h.inventory(200, history.Inventory{Reclaim: 3}, 100)
		}, []string{history.KindOutlived}},
		{"malformed: a completion of nothing", func(h *hist) {
			h.evs = append(h.evs, history.Event{Seq: 1, Of: 7, Op: history.OpRedeem, Phase: history.PhaseOK})
		}, []string{history.KindBad}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hist{}
			tc.build(h)
			rep := history.Check(roundTrip(t, h.evs), history.Options{BackstopBound: 30 * time.Second})
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.Kind)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("violations %v, want %v\n%s", got, tc.want, rep)
			}
			if rep.OK() != (len(tc.want) == 0) || !strings.Contains(rep.String(), "violations: ") {
				t.Errorf("report OK %v for %v:\n%s", rep.OK(), tc.want, rep)
			}
		})
	}
}

// roundTrip writes evs as JSON lines and reads them back, as the command
// does.
func roundTrip(t *testing.T, evs []history.Event) []history.Event {
	t.Helper()
	var b bytes.Buffer
	for _, e := range evs {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	got, err := history.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReadNamesTheLine(t *testing.T) {
	_, err := history.Read(strings.NewReader("{\"seq\":1}\n{nope\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Read of a bad line = %v; want an error naming line 2", err)
	}
}
