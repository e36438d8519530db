package bucketsetup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/blob"
)

// The lifecycle safety net (docs/ARCHITECTURE.md, ADR 0020). On a bucket that can
// expire objects by age (blob.Lifecycler: S3, Google Cloud Storage, and
// Azure Blob Storage through the storage account's management policy;
// ADR 0230), the store keeps one expiration rule per configured namespace
// prefix, one for the namespaces on the default policy, and one that
// aborts incomplete multipart uploads.
// The rules are a backstop for objects the protocol failed to delete; they
// never do the normal work, because every rule is longer than any claim's
// life plus its grace period.
//
// The invariant the rules impose on the engine: S3 counts an object's age
// from its write, not from our references, so a blob shared by dedup must
// have been written recently enough that its rule cannot expire it before
// the new claim's deadline. The engine computes that bound for Commit
// from the rules in force that Run returns (engine's dedupNotBefore).

// Lifecycle modes (Config.Lifecycle, engine.Config.Lifecycle).
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
	// LifecycleMargin is added to max_age + grace_period before rounding up
	// to whole days: it covers clock skew between us and the bucket, and
	// the time between a blob row's creation and its object's write.
	LifecycleMargin = time.Hour
	// abortMultipartDays aborts uploads nobody completed or aborted (a
	// process killed mid-put).
	abortMultipartDays = 1
	// ruleIDPrefix marks claimcheck's rules (and the CORS rule). A
	// lifecycle rule's ID carries the id of the store that wrote it after
	// it, "claimcheck:<store id>:ns:<namespace>", and a store changes only
	// its own (ownRules); rules of other stores sharing the bucket are
	// kept like everybody else's.
	ruleIDPrefix    = "claimcheck:"
	ruleIDDefault   = "default"
	ruleIDAbort     = "abort-multipart"
	ruleIDNamespace = "ns:"
)

// ownRules tells a store's lifecycle rules from everybody else's.
type ownRules struct {
	prefix string // "claimcheck:<store id>:"
	// legacy: the store owns the storage alone (its owner marker), so
	// rules written before IDs carried a store id ("claimcheck:ns:x")
	// are its own too, and are replaced by its scoped ones.
	legacy bool
}

func newOwnRules(storeID string, ownsStorage bool) ownRules {
	return ownRules{prefix: ruleIDPrefix + storeID + ":", legacy: ownsStorage}
}

func (o ownRules) id(name string) string { return o.prefix + name }

func (o ownRules) mine(id string) bool {
	if strings.HasPrefix(id, o.prefix) {
		return true
	}
	return o.legacy && isLegacyRuleID(id)
}

// isLegacyRuleID reports a claimcheck rule without a store id: its part
// after "claimcheck:" is one of the names, not "<store id>:<name>".
func isLegacyRuleID(id string) bool {
	rest, ok := strings.CutPrefix(id, ruleIDPrefix)
	if !ok {
		return false
	}
	return rest == ruleIDDefault || rest == ruleIDAbort || strings.HasPrefix(rest, ruleIDNamespace)
}

// lifecycleDays is the age in days after which a namespace's rule
// expires objects: ceil(lifetime + grace_period + margin), where lifetime
// is ttl.max_lifetime when set (a claim may be extended up to it, ADR
// 0101), else max_age. A claim that writes its object lives at most
// lifetime from its creation, so the rule never expires the object of a
// live claim, extended or not.
func lifecycleDays(p claimcheck.Policy) int {
	d := p.TTL.Lifetime() + p.TTL.GracePeriod.D() + LifecycleMargin
	return int((d + 24*time.Hour - 1) / (24 * time.Hour))
}

// desiredRules are the rules the policies call for, sorted by ID.
func desiredRules(own ownRules, policies map[string]claimcheck.Policy, defaults *claimcheck.Policy, nsPrefix func(ns string) string) []blob.LifecycleRule {
	rules := []blob.LifecycleRule{{ID: own.id(ruleIDAbort), AbortMultipartDays: abortMultipartDays}}
	longest := 0
	for ns, p := range policies {
		days := lifecycleDays(p)
		longest = max(longest, days)
		rules = append(rules, blob.LifecycleRule{ID: own.id(ruleIDNamespace + ns), Prefix: nsPrefix(ns), ExpireDays: days})
	}
	if defaults != nil {
		// The catch-all covers the configured prefixes too, and S3 applies
		// the earliest expiration of overlapping rules: it must be at
		// least as long as every namespace's own rule.
		rules = append(rules, blob.LifecycleRule{ID: own.id(ruleIDDefault), Prefix: "", ExpireDays: max(longest, lifecycleDays(*defaults))})
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
func checkDrift(own ownRules, actual, want []blob.LifecycleRule) []driftItem {
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
		if own.mine(a.ID) && !wanted[a.ID] {
			items = append(items, driftItem{a.ID, "no longer configured", true})
		}
	}
	// A foreign rule (another store's too) that expires our objects
	// sooner than ours would is not ours to change; dedupNotBefore
	// honours it.
	for _, a := range actual {
		if own.mine(a.ID) || a.ExpireDays == 0 {
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

// setupLifecycle runs the start-up check in the configured mode. It
// returns the rules in force, for the engine's dedup bound, and the
// number of drifted rules left as they are, for its gauge.
func setupLifecycle(ctx context.Context, log *slog.Logger, lc blob.Lifecycler, cfg Config) ([]blob.LifecycleRule, int, error) {
	mode := cfg.Lifecycle
	if lc == nil || mode == LifecycleOff {
		return nil, 0, nil
	}
	own := newOwnRules(cfg.StoreID, cfg.OwnsStorage)
	actual, err := lc.LifecycleRules(ctx)
	if errors.Is(err, blob.ErrNoLifecycle) {
		// The store cannot reach its rules as configured (Azure without
		// the account's resource): not fatal, since the backstop still
		// collects, but never silent. Every wanted rule counts as drift
		// left as it is, so the gauge shows it too.
		want := desiredRules(own, cfg.Policies, cfg.Defaults, cfg.NamespacePrefix)
		log.Warn("lifecycle safety net absent: the store's lifecycle rules cannot be read or written; objects the protocol fails to delete stay until the backstop collects them",
			"mode", mode, "rules", len(want), "err", err)
		return nil, len(want), nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("lifecycle: %w (set \"lifecycle: off\" if these credentials may not read the bucket's lifecycle configuration)", err)
	}
	want := desiredRules(own, cfg.Policies, cfg.Defaults, cfg.NamespacePrefix)
	items := checkDrift(own, actual, want)
	if mode == LifecycleCheck || len(items) == 0 {
		for _, it := range items {
			log.Warn("lifecycle rule drift", "rule", it.id, "drift", it.what, "mode", mode)
		}
		return actual, len(items), nil
	}
	// Manage: our rules as wanted, everybody else's as they are.
	next := append([]blob.LifecycleRule(nil), want...)
	for _, a := range actual {
		if !own.mine(a.ID) {
			next = append(next, a)
		}
	}
	err = lc.PutLifecycleRules(ctx, next)
	if err != nil {
		// MinIO refuses AbortIncompleteMultipartUpload (it aborts stale
		// uploads on its own); keep the expiration rules anyway.
		without := next[:0:0]
		for _, r := range next {
			if r.ID != own.id(ruleIDAbort) {
				without = append(without, r)
			}
		}
		if err2 := lc.PutLifecycleRules(ctx, without); err2 != nil {
			return nil, 0, fmt.Errorf("lifecycle: write rules: %w (set \"lifecycle: check\" or \"off\" if these credentials may not change the bucket's configuration)", err)
		}
		log.Info("lifecycle: the bucket refuses abort-incomplete-multipart rules; relying on the service's own clean-up of stale uploads", "err", err)
		next = without
	}
	unrepaired := 0
	for _, it := range items {
		switch {
		case it.id == own.id(ruleIDAbort) && !hasRule(next, own.id(ruleIDAbort)):
			// Not drift: the service cannot have this rule.
		case it.repairable && it.what == "missing":
			log.Info("lifecycle rule created", "rule", it.id)
		case it.repairable:
			log.Warn("lifecycle rule drift repaired", "rule", it.id, "drift", it.what)
		default:
			unrepaired++
			log.Warn("lifecycle rule drift", "rule", it.id, "drift", it.what)
		}
	}
	return next, unrepaired, nil
}

func hasRule(rules []blob.LifecycleRule, id string) bool {
	for _, r := range rules {
		if r.ID == id {
			return true
		}
	}
	return false
}
