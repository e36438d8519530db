package config

import (
	"reflect"
	"sort"

	"gopkg.in/yaml.v3"
)

// Keys lists the key paths a config file decoded into a value of type t
// may hold, walked the way the strict check walks a file (strict.go), so
// that documentation can be compared with what the loader accepts:
//
//   - levels are joined by "." ("defaults.ttl.max_age");
//   - the names of a mapping of names (tenants, namespaces) are "*"
//     ("namespaces.*.threshold");
//   - a list of mappings has its items' keys under the list's key
//     ("subscriptions.targets.url");
//   - a type that decodes itself (sizes, durations, a list of master
//     keys) and a list or mapping of scalars (labels) are one key, a
//     leaf; a Shaper (the defaults section) is walked as its mapping
//     shape.
//
// Only leaves are listed, sorted.
func Keys(t reflect.Type) []string {
	var out []string
	walkKeys(t, "", &out)
	sort.Strings(out)
	return out
}

// mappingShape is the node a Shaper is asked about: any mapping.
var mappingShape = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}

func walkKeys(t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(shaperType) {
		if shape := reflect.New(t).Interface().(Shaper).ConfigShape(mappingShape); shape != nil {
			walkKeys(reflect.TypeOf(shape), path, out)
			return
		}
	}
	if !hasKeys(t) {
		*out = append(*out, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for name, f := range structFields(t) {
			walkKeys(f.typ, join(path, name), out)
		}
	case reflect.Map:
		walkKeys(t.Elem(), join(path, "*"), out)
	case reflect.Slice:
		walkKeys(t.Elem(), path, out)
	}
}

// hasKeys reports whether a value of type t is a mapping of keys the
// strict check looks into (a struct, or a mapping or list of them),
// rather than a leaf.
func hasKeys(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(shaperType) {
		return true
	}
	if pt.Implements(unmarshalerType) || pt.Implements(textType) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Map, reflect.Slice:
		return hasKeys(t.Elem())
	}
	return false
}
