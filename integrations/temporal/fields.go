package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/claimcheck/claimcheck"
)

// OffloadFields returns a copy of state in which every value whose JSON
// encoding reaches the threshold is replaced by a claimcheck reference
// (the Ref's JSON object), so a workflow can pass the state between
// activities while history holds only references: the seed's offload
// between steps.
//
// The walk is bottom-up through nested objects and arrays: a large value
// is first searched for large parts, and is itself replaced only if it is
// still at the threshold after those were; so {"meta": {…}, "photos":
// [5,000 records]} keeps meta inline and offloads photos. References
// already in state are left alone, so offloading twice stores nothing more.
// The root object is never replaced. Values are normalised through JSON
// first (numbers are kept exact as json.Number).
//
// The namespace and threshold come from opts as for NewCodec, and the
// namespace must be replay-safe for the same reason.
func OffloadFields(ctx context.Context, c claimcheck.Claims, opts Options, state map[string]any) (map[string]any, error) {
	pol, err := newPolicies(ctx, c, &opts)
	if err != nil {
		return nil, fmt.Errorf("offload fields: %w", err)
	}
	threshold, err := pol.threshold(ctx, opts.Namespace)
	if err != nil {
		return nil, fmt.Errorf("offload fields: %w", err)
	}
	root, err := normalise(state)
	if err != nil {
		return nil, fmt.Errorf("offload fields: %w", err)
	}
	o := offloader{ctx: ctx, c: c, ns: opts.Namespace, threshold: threshold}
	for k, v := range root {
		if root[k], err = o.walk(v, k); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// MaterializeFields returns a copy of state with every reference written
// by OffloadFields replaced by the value it stands for, at any depth
// (values that themselves held references are materialized too). A state
// without references comes back equal, so materializing twice is
// harmless.
func MaterializeFields(ctx context.Context, c claimcheck.Claims, state map[string]any) (map[string]any, error) {
	root, err := normalise(state)
	if err != nil {
		return nil, fmt.Errorf("materialize fields: %w", err)
	}
	for k, v := range root {
		if root[k], err = materialize(ctx, c, v, k); err != nil {
			return nil, err
		}
	}
	return root, nil
}

type offloader struct {
	ctx       context.Context
	c         claimcheck.Claims
	ns        string
	threshold int64
}

// walk returns v with its large parts offloaded; path names v in errors
// and in the claim's label.
func (o *offloader) walk(v any, path string) (any, error) {
	if isRef(v) {
		return v, nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("offload fields: %s: %w", path, err)
	}
	if int64(len(enc)) < o.threshold {
		return v, nil
	}
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			n, err := o.walk(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = n
			changed = true
		}
	case []any:
		for i, e := range x {
			n, err := o.walk(e, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			x[i] = n
			changed = true
		}
	}
	if changed {
		if enc, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("offload fields: %s: %w", path, err)
		}
		if int64(len(enc)) < o.threshold {
			return v, nil
		}
	}
	labels := map[string]string{"temporal.field": path}
	if len(path) > maxLabelValue {
		labels["temporal.field"] = path[:maxLabelValue]
	}
	ref, err := o.c.Put(o.ctx, o.ns, bytes.NewReader(enc), claimcheck.PutOptions{
		Size: int64(len(enc)), Digest: claimcheck.DigestOf(enc), ContentType: "application/json", Labels: labels,
	})
	if err != nil {
		return nil, fmt.Errorf("offload fields: %s (%d bytes) to %q: %w", path, len(enc), o.ns, err)
	}
	return refValue(ref)
}

func materialize(ctx context.Context, c claimcheck.Claims, v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if isRef(x) {
			ref, err := refOf(x)
			if err != nil {
				return nil, fmt.Errorf("materialize fields: %s: %w", path, err)
			}
			data, err := claimcheck.Resolve(ctx, c, claimcheck.Value{Ref: &ref})
			if err != nil {
				return nil, fmt.Errorf("materialize fields: %s: %w", path, err)
			}
			val, err := decodeJSON(data)
			if err != nil {
				return nil, fmt.Errorf("materialize fields: %s: claim %s: %w", path, ref.ID, err)
			}
			return materialize(ctx, c, val, path)
		}
		for k, e := range x {
			n, err := materialize(ctx, c, e, path+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := materialize(ctx, c, e, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}

// isRef reports whether v is the JSON object of a claimcheck reference.
func isRef(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["type"] == claimcheck.RefType
}

func refOf(m map[string]any) (claimcheck.Ref, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return claimcheck.Ref{}, err
	}
	return claimcheck.ParseRef(b)
}

func refValue(ref claimcheck.Ref) (any, error) {
	b, err := ref.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

// normalise deep-copies state through JSON, so the walks own what they
// change and see only maps, slices, strings, bools, nil and json.Number.
func normalise(state map[string]any) (map[string]any, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
