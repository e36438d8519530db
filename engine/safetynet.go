package engine

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/blob"
)

// The lifecycle safety net (docs/ARCHITECTURE.md, ADR 0020). On a bucket that can
// expire objects by age (blob.Lifecycler: S3), the store keeps one
// expiration rule per configured namespace prefix, one for the namespaces
// on the default policy, and one that aborts incomplete multipart uploads.
// The rules are a backstop for objects the protocol failed to delete; they
// never do the normal work, because every rule is longer than any claim's
// life plus its grace period.
//
// The invariant the rules impose on the engine: S3 counts an object's age
// from its write, not from our references, so a blob shared by dedup must
// have been written recently enough that its rule cannot expire it before
// the new claim's deadline. dedupNotBefore computes that bound for Commit.

// Lifecycle modes (Config.Lifecycle).
const (
	// LifecycleManage creates missing rules and repairs drifted ones at
	// start (the default).
	LifecycleManage = "manage"
	// LifecycleCheck only reads the rules and reports drift, for
	// credentials that may not change the bucket's configuration.
	LifecycleCheck = "check"
	// LifecycleOff neither reads nor writes rules; dedup then assumes the
	// bucket expires nothing.
	LifecycleOff = "off"
)

const (
	// lifecycleMargin is added to max_age + grace_period before rounding up
	// to whole days: it covers clock skew between us and the bucket, and
	// the time between a blob row's creation and its object's write.
	lifecycleMargin = time.Hour
	// abortMultipartDays aborts uploads nobody completed or aborted (a
	// process killed mid-put).
	abortMultipartDays = 1
	// ruleIDPrefix marks the rules this store owns; others are kept.
	ruleIDPrefix    = "claimcheck:"
	ruleIDDefault   = ruleIDPrefix + "default"
	ruleIDAbort     = ruleIDPrefix + "abort-multipart"
	ruleIDNamespace = ruleIDPrefix + "ns:"
)

// lifecycleDays is the age in days after which a namespace's rule
// expires objects: ceil(lifetime + grace_period + margin), where lifetime
// is ttl.max_lifetime when set (a claim may be extended up to it, ADR
// 0101), else max_age. A claim that writes its object lives at most
// lifetime from its creation, so the rule never expires the object of a
// live claim, extended or not.
func lifecycleDays(p claimcheck.Policy) int {
	d := p.TTL.Lifetime() + p.TTL.GracePeriod.D() + lifecycleMargin
	return int((d + 24*time.Hour - 1) / (24 * time.Hour))
}

// desiredRules are the rules the policies call for, sorted by ID.
func desiredRules(policies map[string]claimcheck.Policy, defaults *claimcheck.Policy) []blob.LifecycleRule {
	rules := []blob.LifecycleRule{{ID: ruleIDAbort, AbortMultipartDays: abortMultipartDays}}
	longest := 0
	for ns, p := range policies {
		days := lifecycleDays(p)
		longest = max(longest, days)
		rules = append(rules, blob.LifecycleRule{ID: ruleIDNamespace + ns, Prefix: objectKey(ns, ""), ExpireDays: days})
	}
	if defaults != nil {
		// The catch-all covers the configured prefixes too, and S3 applies
		// the earliest expiration of overlapping rules: it must be at
		// least as long as every namespace's own rule.
		rules = append(rules, blob.LifecycleRule{ID: ruleIDDefault, Prefix: "", ExpireDays: max(longest, lifecycleDays(*defaults))})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	return rules
}

// driftItem is one difference between the bucket's rules and ours.
type driftItem struct {
	id, what   string
	repairable bool
}

// checkDrift compares the bucket's rules with want.
func checkDrift(actual, want []blob.LifecycleRule) []driftItem {
	var items []driftItem
	byID := map[string]blob.LifecycleRule{}
	for _, r := range actual {
		byID[r.ID] = r
	}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.ID] = true
		a, ok := byID[w.ID]
		switch {
		case !ok:
			items = append(items, driftItem{w.ID, "missing", true})
		case a != w:
			items = append(items, driftItem{w.ID, fmt.Sprintf("is %+v, want %+v", a, w), true})
		}
	}
	for _, a := range actual {
		if strings.HasPrefix(a.ID, ruleIDPrefix) && !wanted[a.ID] {
			items = append(items, driftItem{a.ID, "no longer configured", true})
		}
	}
	// A foreign rule that expires our objects sooner than ours would is
	// not ours to change; dedupNotBefore honours it.
	for _, a := range actual {
		if strings.HasPrefix(a.ID, ruleIDPrefix) || a.ExpireDays == 0 {
			continue
		}
		for _, w := range want {
			if w.ExpireDays > 0 && a.ExpireDays < w.ExpireDays && a.Covers(w.Prefix) {
				items = append(items, driftItem{a.ID, fmt.Sprintf("expires objects under %q after %d days, sooner than %s's %d", a.Prefix, a.ExpireDays, w.ID, w.ExpireDays), false})
			}
		}
	}
	return items
}

// setupLifecycle runs the start-up check in the configured mode and
// remembers the rules in force for dedupNotBefore.
func (s *Store) setupLifecycle(ctx context.Context, mode string) error {
	lc, ok := s.blobs.(blob.Lifecycler)
	if !ok || mode == LifecycleOff {
		return nil
	}
	actual, err := lc.LifecycleRules(ctx)
	if err != nil {
		return fmt.Errorf("lifecycle: %w (set \"lifecycle: off\" if these credentials may not read the bucket's lifecycle configuration)", err)
	}
	want := desiredRules(s.policies, s.defaults)
	items := checkDrift(actual, want)
	s.rules = actual
	if mode == LifecycleCheck || len(items) == 0 {
		s.metrics.lifecycleDrift.Set(float64(len(items)))
		for _, it := range items {
			s.log.Warn("lifecycle rule drift", "rule", it.id, "drift", it.what, "mode", mode)
		}
		return nil
	}
	// Manage: our rules as wanted, everybody else's as they are.
	next := append([]blob.LifecycleRule(nil), want...)
	for _, a := range actual {
		if !strings.HasPrefix(a.ID, ruleIDPrefix) {
			next = append(next, a)
		}
	}
	err = lc.PutLifecycleRules(ctx, next)
	if err != nil {
		// MinIO refuses AbortIncompleteMultipartUpload (it aborts stale
		// uploads on its own); keep the expiration rules anyway.
		without := next[:0:0]
		for _, r := range next {
			if r.ID != ruleIDAbort {
				without = append(without, r)
			}
		}
		if err2 := lc.PutLifecycleRules(ctx, without); err2 != nil {
			return fmt.Errorf("lifecycle: write rules: %w (set \"lifecycle: check\" or \"off\" if these credentials may not change the bucket's configuration)", err)
		}
		s.log.Info("lifecycle: the bucket refuses abort-incomplete-multipart rules; relying on the service's own clean-up of stale uploads", "err", err)
		next = without
	}
	unrepaired := 0
	for _, it := range items {
		switch {
		case it.id == ruleIDAbort && !hasRule(next, ruleIDAbort):
			// Not drift: the service cannot have this rule.
		case it.repairable && it.what == "missing":
			s.log.Info("lifecycle rule created", "rule", it.id)
		case it.repairable:
			s.log.Warn("lifecycle rule drift repaired", "rule", it.id, "drift", it.what)
		default:
			unrepaired++
			s.log.Warn("lifecycle rule drift", "rule", it.id, "drift", it.what)
		}
	}
	s.metrics.lifecycleDrift.Set(float64(unrepaired))
	s.rules = next
	return nil
}

func hasRule(rules []blob.LifecycleRule, id string) bool {
	for _, r := range rules {
		if r.ID == id {
			return true
		}
	}
	return false
}

// dedupNotBefore is the oldest creation time of a blob that dedup may
// share with a claim expiring at expires in namespace ns: the bucket's
// rules in force must keep the blob's object until then plus the margin.
// An object is written after its blob row is created, and S3 counts whole
// days from the write, so a blob created at or after the bound outlives
// the claim. The zero time (no bound) when no rule covers the namespace.
func (s *Store) dedupNotBefore(ns string, expires time.Time) time.Time {
	prefix := objectKey(ns, "")
	days := 0
	for _, r := range s.rules {
		if r.ExpireDays > 0 && r.Covers(prefix) && (days == 0 || r.ExpireDays < days) {
			days = r.ExpireDays
		}
	}
	if days == 0 {
		return time.Time{}
	}
	return expires.Add(lifecycleMargin - time.Duration(days)*24*time.Hour)
}

// RedactURL drops the password and query of a URL shown in errors and
// logs: a postgres:// DSN may carry a password, a storage URL endpoint
// parameters.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	u.RawQuery = ""
	return u.String()
}

// latestExpiry is the latest a claim created at created with expiry
// expires may ever expire under policy p: created + ttl.max_lifetime when
// extensions may move it there (ADR 0101), else expires. Dedup bounds the
// blobs it shares by this, not by the expiry of the day, so that the
// choice already holds for every expiry the claim may be given later
// (Extend checks again, for blobs chosen under an older policy).
func latestExpiry(p claimcheck.Policy, created, expires time.Time) time.Time {
	if l := created.Add(p.TTL.Lifetime()); l.After(expires) {
		return l
	}
	return expires
}
