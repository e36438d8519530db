package history

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options tune Check.
type Options struct {
	// Skew is the allowance around every deadline for the distance
	// between the client's clock and the server's, and for second
	// precision of expires_at (default 2s).
	Skew time.Duration
	// BackstopBound is how long the object of a finished claim may
	// outlive it: the grace period plus the sweeper's largest lag, as the
	// run configured them (0: not checked).
	BackstopBound time.Duration
}

// Violation kinds.
const (
	KindLost  = "lost"        // an acknowledged put did not redeem before its earliest legitimate end
	KindBytes = "wrong_bytes" // a redeem returned other bytes than the put stored
	KindLate  = "late"        // a redeem succeeded after the claim's documented end
	KindQuota = "quota"       // the usage reported is outside what the live set allows
	KindBad   = "malformed"   // the history itself does not hold together
	// The inventory's kinds.
	KindUnowned  = "unowned"  // an object no blob owns
	KindMissing  = "missing"  // a blob whose object is gone
	KindOutlived = "outlived" // an object of a finished claim kept past the backstop bound
)

// Violation is one broken promise, with the event that shows it.
type Violation struct {
	Kind string
	Seq  int64 // the completion that shows it
	ID   string
	Text string
}

// Report is what Check found.
type Report struct {
	Events, Acknowledged, Indeterminate, Redeems, Usages, Inventories int
	Violations                                                        []Violation
}

// OK reports a history without violations.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// String is the report as a person reads it.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d events; %d puts acknowledged, %d without a definite answer; %d redeems; %d usage checks; %d inventories\n",
		r.Events, r.Acknowledged, r.Indeterminate, r.Redeems, r.Usages, r.Inventories)
	counts := map[string]int{}
	for _, v := range r.Violations {
		counts[v.Kind]++
	}
	fmt.Fprintf(&b, "violations: %d", len(r.Violations))
	for _, k := range []string{KindLost, KindBytes, KindLate, KindQuota, KindUnowned, KindMissing, KindOutlived, KindBad} {
		if counts[k] > 0 {
			fmt.Fprintf(&b, " (%s %d)", k, counts[k])
		}
	}
	b.WriteString("\n")
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s: event %d, claim %s: %s\n", v.Kind, v.Seq, v.ID, v.Text)
	}
	return b.String()
}

// call is an invocation and its completion (nil: no answer came).
type call struct {
	inv  Event
	done *Event
}

func (c call) ok() bool { return c.done != nil && c.done.Phase == PhaseOK }

// failedWith reports a completion that failed with one of classes.
func (c call) failedWith(classes ...string) bool {
	return c.done != nil && c.done.Phase == PhaseFail && slices.Contains(classes, c.done.Error)
}

// claim is every call on one acknowledged claim.
type claim struct {
	put                                        call
	redeems, releases, extends, deletes, holds []call
}

// forever stands for "no end known".
var forever = time.Unix(1<<40, 0)

// Check checks a history (see the package comment).
func Check(evs []Event, opt Options) Report {
	if opt.Skew == 0 {
		opt.Skew = 2 * time.Second
	}
	rep := Report{Events: len(evs)}
	calls, bad := pair(evs)
	rep.Violations = append(rep.Violations, bad...)
	claims := map[string]*claim{}
	var puts, usages []call
	for _, c := range calls {
		switch c.inv.Op {
		case OpInventory:
			if c.ok() && c.done.Inventory != nil {
				rep.Inventories++
				rep.Violations = append(rep.Violations, checkInventory(c.done, opt.BackstopBound)...)
			}
		case OpPut:
			puts = append(puts, c)
			if c.ok() {
				claims[c.done.ID] = &claim{put: c}
				rep.Acknowledged++
			} else {
				rep.Indeterminate++
			}
		case OpUsage:
			usages = append(usages, c)
		}
	}
	for _, c := range calls {
		cl := claims[c.inv.ID]
		if cl == nil {
			continue
		}
		switch c.inv.Op {
		case OpRedeem:
			cl.redeems = append(cl.redeems, c)
			rep.Redeems++
		case OpRelease:
			cl.releases = append(cl.releases, c)
		case OpExtend:
			cl.extends = append(cl.extends, c)
		case OpDelete:
			cl.deletes = append(cl.deletes, c)
		case OpHold:
			cl.holds = append(cl.holds, c)
		}
	}
	for _, c := range puts {
		if c.ok() {
			rep.Violations = append(rep.Violations, claims[c.done.ID].check(opt.Skew)...)
		}
	}
	for _, u := range usages {
		if u.ok() {
			rep.Usages++
			rep.Violations = append(rep.Violations, checkUsage(u, puts, claims, opt.Skew)...)
		}
	}
	return rep
}

// pair matches completions to their invocations, in invocation order.
func pair(evs []Event) ([]call, []Violation) {
	var bad []Violation
	bySeq := map[int64]int{}
	var calls []call
	for _, e := range evs {
		if e.Phase == PhaseInvoke {
			bySeq[e.Seq] = len(calls)
			calls = append(calls, call{inv: e})
		}
	}
	for _, e := range evs {
		if e.Phase == PhaseInvoke {
			continue
		}
		i, ok := bySeq[e.Of]
		if !ok || calls[i].done != nil || calls[i].inv.Op != e.Op {
			bad = append(bad, Violation{Kind: KindBad, Seq: e.Seq, ID: e.ID, Text: fmt.Sprintf("completion of %s names no open invocation (of %d)", e.Op, e.Of)})
			continue
		}
		done := e
		calls[i].done = &done
	}
	return calls, bad
}

// earliestEnd is the first moment the claim may legitimately be gone:
// its max_age deadline, its first read plus the read window, or the
// first delete or release asked for.
func (c *claim) earliestEnd() time.Time {
	end := forever
	if e := c.put.done.ExpiresAt; !e.IsZero() {
		end = e
	}
	for _, d := range c.deletes {
		end = minTime(end, d.inv.Time)
	}
	// A release may finish the claim (its last consumer's, after
	// retention_after_read): no promise holds past the first one.
	for _, r := range c.releases {
		end = minTime(end, r.inv.Time)
	}
	if w := c.put.done.ReadWindow; w > 0 {
		for _, r := range c.redeems {
			end = minTime(end, r.inv.Time.Add(w))
		}
	}
	return end
}

// latestEnd is the moment after which no redeem may succeed: the max_age
// deadline (extended), a completed delete, or the read window after the
// first successful read and the last release. A hold, or an extension or
// release without a definite answer, leaves that part unknown.
func (c *claim) latestEnd() time.Time {
	if len(c.holds) > 0 {
		return forever
	}
	end, expires := forever, c.put.done.ExpiresAt
	known := !expires.IsZero()
	for _, x := range c.extends {
		switch {
		case x.ok():
			expires = maxTime(expires, x.done.ExpiresAt)
		case !x.failedWith("gone", "expired", "not_found", "held"):
			known = false
		}
	}
	if known {
		end = expires
	}
	for _, d := range c.deletes {
		if d.ok() {
			end = minTime(end, d.done.Time)
		}
	}
	if w := c.put.done.ReadWindow; w > 0 {
		var first, last time.Time
		windowKnown := true
		for _, r := range c.redeems {
			if r.ok() && (first.IsZero() || r.done.Time.Before(first)) {
				first = r.done.Time
			}
		}
		for _, r := range c.releases {
			if r.done == nil {
				windowKnown = false
			} else {
				last = maxTime(last, r.done.Time)
			}
		}
		if windowKnown && !first.IsZero() {
			end = minTime(end, maxTime(first, last).Add(w))
		}
	}
	return end
}

// check finds the redeems of one claim that break a promise.
func (c *claim) check(skew time.Duration) []Violation {
	var out []Violation
	id, ack := c.put.done.ID, c.put.done.Time
	early, late := c.earliestEnd().Add(-skew), c.latestEnd().Add(skew)
	for _, r := range c.redeems {
		switch {
		case r.done == nil:
		case r.ok() && r.done.Digest != c.put.done.Digest:
			out = append(out, Violation{KindBytes, r.done.Seq, id, fmt.Sprintf("redeemed %s, the put stored %s", r.done.Digest, c.put.done.Digest)})
		case r.ok() && r.inv.Time.After(late):
			out = append(out, Violation{KindLate, r.done.Seq, id, fmt.Sprintf("redeemed at %s, after its end at %s", stamp(r.inv.Time), stamp(late.Add(-skew)))})
		case r.failedWith("gone", "expired", "not_found") && r.inv.Time.After(ack) && r.done.Time.Before(early):
			out = append(out, Violation{KindLost, r.done.Seq, id, fmt.Sprintf("redeem answered %s at %s, before its earliest end at %s", r.done.Error, stamp(r.done.Time), stamp(early.Add(skew)))})
		}
	}
	return out
}

// checkUsage compares one usage answer with the claims of its namespace
// that were surely live through the call (at least) and those that may
// have been (at most: puts without an answer, claims near an end, and
// ended claims the sweeper may not have finished yet).
func checkUsage(u call, puts []call, claims map[string]*claim, skew time.Duration) []Violation {
	var minClaims, maxClaims, minBytes, maxBytes int64
	from, to := u.inv.Time, u.done.Time
	for _, p := range puts {
		if p.inv.NS != u.inv.NS || !p.inv.Time.Before(to) {
			continue
		}
		size := p.inv.Size
		if !p.ok() || !p.done.Time.Before(from) {
			maxClaims, maxBytes = maxClaims+1, maxBytes+size
			continue
		}
		c := claims[p.done.ID]
		if deletedBefore(c, from) {
			continue
		}
		maxClaims, maxBytes = maxClaims+1, maxBytes+size
		if c.earliestEnd().Add(-skew).After(to) {
			minClaims, minBytes = minClaims+1, minBytes+size
		}
	}
	got := u.done
	if got.ActiveClaims < minClaims || got.ActiveClaims > maxClaims || got.UsedBytes < minBytes || got.UsedBytes > maxBytes {
		return []Violation{{KindQuota, got.Seq, "-", fmt.Sprintf("namespace %s reported %d active claims of %d bytes; the history allows %d–%d claims of %d–%d bytes",
			u.inv.NS, got.ActiveClaims, got.UsedBytes, minClaims, maxClaims, minBytes, maxBytes)}}
	}
	return nil
}

// deletedBefore reports a delete of c acknowledged before t.
func deletedBefore(c *claim, t time.Time) bool {
	for _, d := range c.deletes {
		if d.ok() && d.done.Time.Before(t) {
			return true
		}
	}
	return false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// checkInventory judges what the store held at the end of a run: every
// object owned, every owned object there, quota counters equal to the
// live claims, and no object of a finished claim waiting longer than
// bound (when given) for its collection.
func checkInventory(e *Event, bound time.Duration) []Violation {
	inv := e.Inventory
	var out []Violation
	add := func(kind string, n int, text string) {
		if n > 0 {
			out = append(out, Violation{Kind: kind, Seq: e.Seq, Text: fmt.Sprintf("%d %s", n, text)})
		}
	}
	add(KindUnowned, inv.Unowned, "objects in the storage that no blob owns")
	add(KindMissing, inv.Missing, "blobs whose object the storage does not have")
	add(KindQuota, inv.QuotaDrift, "namespaces whose quota counters disagree with their live claims")
	if bound > 0 && !inv.OldestReclaim.IsZero() && e.Time.Sub(inv.OldestReclaim) > bound {
		add(KindOutlived, inv.Reclaim, fmt.Sprintf("objects of finished claims still stored, the oldest finished at %s, more than %s before the inventory at %s",
			stamp(inv.OldestReclaim), bound, stamp(e.Time)))
	}
	return out
}
