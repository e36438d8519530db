package config

import (
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
)

// Explicit zeros. In a namespace's policy a quota field or
// ttl.max_lifetime given as 0 is the namespace's own and beats the
// defaults, while one left out takes them (ADR 0080). The decoded values
// cannot tell the two apart, so after decoding, the YAML tree is walked
// beside the value and every quota and ttl section is told which of
// those keys the file (or an environment variable) gave.

var (
	quotaType = reflect.TypeFor[claimcheck.Quota]()
	ttlType   = reflect.TypeFor[claimcheck.TTLPolicy]()
)

// markGiven walks n beside v, the value decoded from it.
func markGiven(n *yaml.Node, v reflect.Value) {
	n = resolveAlias(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if !v.CanAddr() {
		return
	}
	t := v.Type()
	switch {
	case t == quotaType && n.Kind == yaml.MappingNode:
		v.Addr().Interface().(*claimcheck.Quota).MarkGiven(hasKey(n, "bytes"), hasKey(n, "claims"))
		return
	case t == ttlType && n.Kind == yaml.MappingNode:
		v.Addr().Interface().(*claimcheck.TTLPolicy).MarkMaxLifetimeGiven(hasKey(n, "max_lifetime"))
		return
	}
	if reflect.PointerTo(t).Implements(shaperType) {
		// A type that decodes a node itself: the node has the shape's
		// form, and the value holds the shape in a field of its type.
		shape := v.Addr().Interface().(Shaper).ConfigShape(n)
		if shape == nil || t.Kind() != reflect.Struct {
			return
		}
		st := reflect.TypeOf(shape)
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() && t.Field(i).Type == st {
				markGiven(n, v.Field(i))
				return
			}
		}
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := structFields(t)
		eachKey(n, func(key, value *yaml.Node) {
			if field, ok := fields[key.Value]; ok {
				if f, ok := fieldByIndex(v, field.index); ok {
					markGiven(value, f)
				}
			}
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode || t.Key().Kind() != reflect.String || v.IsNil() {
			return
		}
		eachKey(n, func(key, value *yaml.Node) {
			k := reflect.ValueOf(key.Value).Convert(t.Key())
			e := v.MapIndex(k)
			if !e.IsValid() {
				return
			}
			c := reflect.New(t.Elem()).Elem()
			c.Set(e)
			markGiven(value, c)
			v.SetMapIndex(k, c)
		})
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			if i < v.Len() {
				markGiven(item, v.Index(i))
			}
		}
	}
}

// eachKey calls each for every key of the mapping n with the value that
// takes effect, as yaml.v3 decodes it: a key given here wins over the
// mappings merged in ("<<: *base"), and among those the first wins.
func eachKey(n *yaml.Node, each func(key, value *yaml.Node)) {
	seen := map[string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			if key.Tag == "!!merge" {
				merges = append(merges, value)
				continue
			}
			if !seen[key.Value] {
				seen[key.Value] = true
				each(key, value)
			}
		}
		for _, value := range merges {
			for _, m := range mergeSources(value) {
				if m.Kind == yaml.MappingNode {
					walk(m)
				}
			}
		}
	}
	walk(n)
}

// hasKey reports whether the mapping n gives key a value (an empty value
// is as good as absent).
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			return !(v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null")
		}
	}
	return false
}

// fieldByIndex is v.FieldByIndex that stops at a nil pointer.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 {
			for v.Kind() == reflect.Pointer {
				if v.IsNil() {
					return reflect.Value{}, false
				}
				v = v.Elem()
			}
		}
		v = v.Field(x)
	}
	return v, true
}
