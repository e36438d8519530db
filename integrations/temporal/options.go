package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/claimcheck/claimcheck"
)

// ThresholdEnv is the environment variable that overrides the namespace's
// threshold when Options.Threshold is zero: payloads of at least this many
// serialized bytes are offloaded.
const ThresholdEnv = "CLAIMCHECK_THRESHOLD_BYTES"

// DefaultNamespace is the claimcheck namespace used when Options.Namespace
// is empty.
const DefaultNamespace = "temporal"

// Target identifies the workflow or activity a payload belongs to, as far
// as the SDK tells. Fields the SDK does not know are empty.
type Target struct {
	Namespace    string // Temporal namespace
	WorkflowType string
	WorkflowID   string
	RunID        string
	ActivityType string
	ActivityID   string
	TaskQueue    string
}

// Labels returns the claim labels recording the target, so that `claimcheck
// stat` shows which workflow or activity a claim belongs to. Empty fields
// are left out; values are cut to the store's label length limit.
func (t Target) Labels() map[string]string {
	l := map[string]string{}
	add := func(k, v string) {
		if v == "" {
			return
		}
		if len(v) > maxLabelValue {
			v = v[:maxLabelValue]
		}
		l[k] = v
	}
	add("temporal.namespace", t.Namespace)
	add("temporal.workflow_type", t.WorkflowType)
	add("temporal.workflow_id", t.WorkflowID)
	add("temporal.run_id", t.RunID)
	add("temporal.activity_type", t.ActivityType)
	add("temporal.activity_id", t.ActivityID)
	add("temporal.task_queue", t.TaskQueue)
	return l
}

// maxLabelValue is the store's limit on a label value.
const maxLabelValue = 256

// Options configure a Driver or a Codec.
type Options struct {
	// Namespace is the claimcheck namespace payloads go to (default
	// "temporal").
	Namespace string
	// NamespaceFor, when set, chooses the namespace per workflow or
	// activity; an empty result means Namespace. Every namespace it can
	// return must be replay-safe (see NewDriver); each is checked the
	// first time it is used, and a payload bound for an unsafe one fails.
	NamespaceFor func(Target) string
	// Threshold is the serialized payload size in bytes at or above which
	// a payload is offloaded. 0 means the CLAIMCHECK_THRESHOLD_BYTES
	// environment variable when set, otherwise the namespace's threshold
	// (default 50 KiB).
	Threshold int64
}

// ErrReplayUnsafe is wrapped by the error a Driver or Codec returns for a
// namespace whose policy deletes claims after their first read.
var ErrReplayUnsafe = errors.New("namespace deletes claims after their first read, but Temporal replays history and reads every reference again")

// thresholdFromEnv returns the threshold set by CLAIMCHECK_THRESHOLD_BYTES,
// or 0 when it is not set.
func thresholdFromEnv() (int64, error) {
	s, ok := os.LookupEnv(ThresholdEnv)
	if !ok || s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %s=%q: want a positive number of bytes", claimcheck.ErrInvalidArgument, ThresholdEnv, s)
	}
	return n, nil
}

// policies checks and caches namespace policies. Policies are read once
// per namespace: a policy change reaches a running worker on restart,
// which matches the store's rule that policy changes apply to new claims.
type policies struct {
	c        claimcheck.Claims
	override int64 // threshold from Options or the environment; 0 = policy's

	mu    sync.Mutex
	cache map[string]int64 // namespace -> threshold, only replay-safe ones
}

func newPolicies(ctx context.Context, c claimcheck.Claims, opts *Options) (*policies, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: claims: nil", claimcheck.ErrInvalidArgument)
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Threshold < 0 {
		return nil, fmt.Errorf("%w: threshold %d: must not be negative", claimcheck.ErrInvalidArgument, opts.Threshold)
	}
	override := opts.Threshold
	if override == 0 {
		env, err := thresholdFromEnv()
		if err != nil {
			return nil, err
		}
		override = env
	}
	p := &policies{c: c, override: override, cache: map[string]int64{}}
	// Check the default namespace now, so a misconfiguration fails the
	// worker at startup rather than the first large payload.
	if _, err := p.threshold(ctx, opts.Namespace); err != nil {
		return nil, err
	}
	return p, nil
}

// threshold returns the offload threshold of namespace ns after checking
// that ns keeps claims across reads.
func (p *policies) threshold(ctx context.Context, ns string) (int64, error) {
	p.mu.Lock()
	t, ok := p.cache[ns]
	p.mu.Unlock()
	if ok {
		return t, nil
	}
	pol, err := p.c.Policy(ctx, ns)
	if err != nil {
		return 0, fmt.Errorf("claimcheck namespace %q: %w", ns, err)
	}
	if pol.DeletesAfterRead() {
		return 0, fmt.Errorf("%w: claimcheck namespace %q: ttl.delete_after_read is on: %w (set delete_after_read: false, and run the keeper or give max_age at least the Temporal namespace retention plus the longest workflow run)", claimcheck.ErrInvalidArgument, ns, ErrReplayUnsafe)
	}
	t = int64(pol.Threshold)
	if p.override > 0 {
		t = p.override
	}
	p.mu.Lock()
	p.cache[ns] = t
	p.mu.Unlock()
	return t, nil
}

func namespaceOf(opts Options, t Target) string {
	if opts.NamespaceFor != nil {
		if ns := opts.NamespaceFor(t); ns != "" {
			return ns
		}
	}
	return opts.Namespace
}
