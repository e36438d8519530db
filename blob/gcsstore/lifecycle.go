package gcsstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"

	"github.com/claimcheck/claimcheck/blob"
)

// ruleMarker starts the extra matchesPrefix entry that carries the ID of
// a lifecycle rule: GCS rules have no ID, and claimcheck must tell its
// own rules from everybody else's. The entry is a second prefix of the
// rule (a rule matches an object under any of its prefixes), so it only
// adds objects whose names start with ".claimcheck-rule/", which nobody
// writes (ADR 0230).
const ruleMarker = ".claimcheck-rule/"

// LifecycleRules implements blob.Lifecycler. A rule is read from the
// bucket's Delete and AbortIncompleteMultipartUpload rules: one carrying
// an ID marker is the rule of that ID (its two actions merged); any
// other gets the ID "gcs:<n>", its place in the bucket's list, and one
// entry per prefix. Conditions other than age and prefix make it
// Filtered.
func (b *Bucket) LifecycleRules(ctx context.Context) ([]blob.LifecycleRule, error) {
	attrs, err := b.bucket.Attrs(ctx)
	if err != nil {
		return nil, fmt.Errorf("blob: get lifecycle rules of bucket %s: %w", b.name, err)
	}
	return b.fromGCS(attrs.Lifecycle.Rules), nil
}

// fromGCS turns the bucket's rules into blob.LifecycleRules.
func (b *Bucket) fromGCS(in []storage.LifecycleRule) []blob.LifecycleRule {
	out := []blob.LifecycleRule{}
	byID := map[string]int{}
	for i, r := range in {
		var days, abort int
		switch r.Action.Type {
		case storage.DeleteAction:
			days = int(r.Condition.AgeInDays)
			if days == 0 {
				// A date, a custom time or "all objects": any time now,
				// the strictest reading for a safety check.
				days = 1
			}
		case storage.AbortIncompleteMPUAction:
			abort = int(max(r.Condition.AgeInDays, 1))
		default:
			continue // storage class changes delete nothing
		}
		id, prefixes := "", []string{}
		for _, p := range r.Condition.MatchesPrefix {
			if m, ok := strings.CutPrefix(p, ruleMarker); ok {
				id = m
				continue
			}
			prefixes = append(prefixes, p)
		}
		if len(r.Condition.MatchesPrefix) == 0 {
			prefixes = append(prefixes, "")
		}
		c := r.Condition
		filtered := len(c.MatchesSuffix) > 0 || len(c.MatchesStorageClasses) > 0 || c.Liveness != storage.LiveAndArchived ||
			!c.CreatedBefore.IsZero() || !c.CustomTimeBefore.IsZero() || c.DaysSinceCustomTime > 0 ||
			c.DaysSinceNoncurrentTime > 0 || !c.NoncurrentTimeBefore.IsZero() || c.NumNewerVersions > 0
		if id != "" && len(prefixes) == 1 {
			prefix, under := strings.CutPrefix(prefixes[0], b.prefix)
			if j, seen := byID[id]; seen && under {
				out[j].ExpireDays = max(out[j].ExpireDays, days)
				out[j].AbortMultipartDays = max(out[j].AbortMultipartDays, abort)
				continue
			}
			if under {
				byID[id] = len(out)
				out = append(out, blob.LifecycleRule{ID: id, Prefix: prefix, ExpireDays: days, AbortMultipartDays: abort, Filtered: filtered})
				continue
			}
		}
		for _, p := range prefixes {
			// A foreign rule (or one of another prefix): it counts where it
			// reaches our keys, seen from under our prefix.
			rel, ok := relative(p, b.prefix)
			if !ok {
				continue
			}
			out = append(out, blob.LifecycleRule{ID: foreignID(i), Prefix: rel, ExpireDays: days, AbortMultipartDays: abort, Filtered: filtered})
		}
	}
	return out
}

// relative is the prefix p of the bucket seen from under the store's
// prefix: the part past it, "" when p covers all of it, and false when p
// reaches none of the store's keys.
func relative(p, prefix string) (string, bool) {
	switch {
	case strings.HasPrefix(p, prefix):
		return p[len(prefix):], true
	case strings.HasPrefix(prefix, p):
		return "", true
	}
	return "", false
}

// foreignID names the i-th rule of the bucket's list, which has no ID.
func foreignID(i int) string { return "gcs:" + strconv.Itoa(i) }

// PutLifecycleRules implements blob.Lifecycler. The rules with IDs of
// their own are written with their ID marker; a rule read as "gcs:<n>"
// is written back exactly as the bucket had it (not as read: the reading
// drops what claimcheck does not model), and the others the bucket has
// are dropped, as the contract's "replaces the whole configuration"
// says.
func (b *Bucket) PutLifecycleRules(ctx context.Context, rules []blob.LifecycleRule) error {
	attrs, err := b.bucket.Attrs(ctx)
	if err != nil {
		return fmt.Errorf("blob: put lifecycle rules of bucket %s: %w", b.name, err)
	}
	out, err := b.toGCS(attrs.Lifecycle.Rules, rules)
	if err != nil {
		return err
	}
	_, err = b.bucket.Update(ctx, storage.BucketAttrsToUpdate{Lifecycle: &storage.Lifecycle{Rules: out}})
	if err != nil {
		return fmt.Errorf("blob: put lifecycle rules of bucket %s (%d rules): %w", b.name, len(out), err)
	}
	return nil
}

// toGCS is the bucket's new rule list: rules, over the bucket's current
// list have (for the foreign rules kept).
func (b *Bucket) toGCS(have []storage.LifecycleRule, rules []blob.LifecycleRule) ([]storage.LifecycleRule, error) {
	var out []storage.LifecycleRule
	for _, r := range rules {
		if n, ok := strings.CutPrefix(r.ID, "gcs:"); ok {
			i, err := strconv.Atoi(n)
			if err != nil || i < 0 || i >= len(have) {
				return nil, fmt.Errorf("blob: put lifecycle rule %q: the bucket has no such rule any more; read the rules again", r.ID)
			}
			if !slices.ContainsFunc(out, func(o storage.LifecycleRule) bool { return equalRule(o, have[i]) }) {
				out = append(out, have[i])
			}
			continue
		}
		if r.Filtered {
			return nil, fmt.Errorf("blob: put lifecycle rule %q: filters other than a prefix cannot be written back; remove the rule or manage the bucket's lifecycle by hand", r.ID)
		}
		if r.ID == "" {
			return nil, fmt.Errorf("blob: put lifecycle rule of prefix %q: a rule needs an ID", r.Prefix)
		}
		prefixes := []string{b.prefix + r.Prefix, ruleMarker + r.ID}
		if r.ExpireDays > 0 {
			out = append(out, storage.LifecycleRule{
				Action:    storage.LifecycleAction{Type: storage.DeleteAction},
				Condition: storage.LifecycleCondition{AgeInDays: int64(r.ExpireDays), MatchesPrefix: prefixes},
			})
		}
		if r.AbortMultipartDays > 0 {
			out = append(out, storage.LifecycleRule{
				Action:    storage.LifecycleAction{Type: storage.AbortIncompleteMPUAction},
				Condition: storage.LifecycleCondition{AgeInDays: int64(r.AbortMultipartDays), MatchesPrefix: prefixes},
			})
		}
	}
	return out, nil
}

func equalRule(a, b storage.LifecycleRule) bool {
	return a.Action == b.Action && a.Condition.AgeInDays == b.Condition.AgeInDays && slices.Equal(a.Condition.MatchesPrefix, b.Condition.MatchesPrefix) &&
		slices.Equal(a.Condition.MatchesSuffix, b.Condition.MatchesSuffix) && a.Condition.CreatedBefore.Equal(b.Condition.CreatedBefore)
}
