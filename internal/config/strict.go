package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
)

// The strict check. Before anything is decoded, the YAML tree (file and
// environment overrides together) is walked against the target type, so
// that every mistake is reported in the user's terms:
//
//   - an unknown key, at any depth and behind any custom decoder (the
//     defaults section decodes its policy itself, which used to drop
//     yaml.v3's strict mode and ignore typos there), names the key's path
//     as written ("defaults.ttl.max_agee") and the known keys;
//   - a value of the wrong kind or that does not parse names the path
//     ("defaults.quota.bytes: must not be negative");
//   - an explicit zero where zero would silently mean "the default"
//     (fields tagged config:"nonzero") is refused;
//   - a mistake that came from an environment variable names the
//     variable, never a line of a file it is not in.
//
// Go type and field names never appear in these messages.

// Shaper is implemented by config types that decode a node themselves
// (yaml.Unmarshaler) but whose mapping form the strict check should look
// into: ConfigShape returns a value of the type the node must match, or
// nil to leave the node to the type's UnmarshalYAML.
type Shaper interface {
	ConfigShape(n *yaml.Node) any
}

// Error is a config mistake: the key path as written, what is wrong, and
// where it came from (a line of the file, or an environment variable).
type Error struct {
	Path     string // "defaults.ttl.max_age"
	Reason   string
	Line     int    // of the file; 0 when Variable is set
	Variable string // CLAIMCHECK_…, when the value came from the environment
}

func (e *Error) Error() string {
	if e.Variable != "" {
		return fmt.Sprintf("environment %s: %s: %s", e.Variable, e.Path, e.Reason)
	}
	return fmt.Sprintf("%s: %s (line %d)", e.Path, e.Reason, e.Line)
}

// Is makes config mistakes ErrInvalidArgument, like the store's own
// validation errors.
func (e *Error) Is(target error) bool { return target == claimcheck.ErrInvalidArgument }

// checker walks a YAML tree against a type.
type checker struct {
	// origin maps the nodes environment variables set or created to the
	// variable; their descendants inherit it.
	origin map[*yaml.Node]string
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
	contractPkg     = reflect.TypeFor[claimcheck.Size]().PkgPath()
	shaperType      = reflect.TypeFor[Shaper]()
)

func (c *checker) fail(n *yaml.Node, from, path, format string, args ...any) error {
	e := &Error{Path: path, Reason: fmt.Sprintf(format, args...), Variable: from}
	if from == "" {
		e.Line = n.Line
	}
	return e
}

// check reports the first mistake in n for a value of type t at path.
// from is the environment variable n came from, if any.
func (c *checker) check(n *yaml.Node, t reflect.Type, path, from string, nonzero bool) error {
	if v, ok := c.origin[n]; ok {
		from = v
	}
	n = resolveAlias(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value: the key is as good as absent
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(shaperType) {
		if shape := reflect.New(t).Interface().(Shaper).ConfigShape(n); shape != nil {
			return c.check(n, reflect.TypeOf(shape), path, from, nonzero)
		}
	}
	if pt.Implements(unmarshalerType) {
		v := reflect.New(t)
		if err := v.Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			return c.fail(n, from, path, "%s", reason(err, n))
		}
		if nonzero && v.Elem().IsZero() {
			return c.zero(n, from, path)
		}
		return nil
	}
	if pt.Implements(textType) && t.PkgPath() == contractPkg {
		// The contract's scalars (sizes, durations) parse their text
		// themselves; what they say is the reason.
		v := reflect.New(t)
		if err := v.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return c.fail(n, from, path, "%s", reason(err, n))
		}
		if nonzero && v.Elem().IsZero() {
			return c.zero(n, from, path)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return c.fail(n, from, path, "want a mapping of keys to values, got %s", describe(n))
		}
		fields := structFields(t)
		return c.mapping(n, path, from, func(key *yaml.Node, value *yaml.Node, keyFrom string) error {
			f, ok := fields[key.Value]
			if !ok {
				return c.fail(key, keyFrom, join(path, key.Value), "unknown key; known keys here: %s", knownKeys(fields))
			}
			return c.check(value, f.typ, join(path, key.Value), keyFrom, f.nonzero)
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return c.fail(n, from, path, "want a mapping, got %s", describe(n))
		}
		return c.mapping(n, path, from, func(key *yaml.Node, value *yaml.Node, keyFrom string) error {
			if key.Kind != yaml.ScalarNode {
				return c.fail(key, keyFrom, path, "want names as keys, got %s", describe(key))
			}
			return c.check(value, t.Elem(), join(path, key.Value), keyFrom, false)
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return c.fail(n, from, path, "want a list, got %s", describe(n))
		}
		for i, item := range n.Content {
			if err := c.check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), from, false); err != nil {
				return err
			}
		}
		return nil
	case reflect.Interface:
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return c.fail(n, from, path, "want %s, got %s", kindName(t), describe(n))
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		return c.fail(n, from, path, "want %s, got %q", kindName(t), clip(n.Value))
	}
	if nonzero && v.Elem().IsZero() {
		return c.zero(n, from, path)
	}
	return nil
}

// mapping calls each for every key of the mapping n, following YAML
// merge keys ("<<: *base") into the mappings they merge.
func (c *checker) mapping(n *yaml.Node, path, from string, each func(key, value *yaml.Node, keyFrom string) error) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		keyFrom := from
		if v, ok := c.origin[key]; ok {
			keyFrom = v
		}
		if key.Tag == "!!merge" {
			for _, m := range mergeSources(value) {
				if m.Kind != yaml.MappingNode {
					return c.fail(m, keyFrom, path, "a merge key (<<) must merge mappings")
				}
				if err := c.mapping(m, path, keyFrom, each); err != nil {
					return err
				}
			}
			continue
		}
		if err := each(key, value, keyFrom); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) zero(n *yaml.Node, from, path string) error {
	return c.fail(n, from, path, "an explicit %s is not allowed here: it would silently mean the default; leave the key out for the default, or give a positive value", clip(n.Value))
}

type fieldInfo struct {
	typ     reflect.Type
	nonzero bool
	index   []int // the field's index path in the struct (reflect.Value.FieldByIndex)
}

// structFields returns the yaml keys of struct type t, inline fields
// included.
func structFields(t reflect.Type) map[string]fieldInfo {
	out := map[string]fieldInfo{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct {
				continue
			}
			for k, v := range structFields(ft) {
				v.index = append([]int{i}, v.index...)
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = fieldInfo{typ: f.Type, nonzero: f.Tag.Get("config") == "nonzero", index: []int{i}}
	}
	return out
}

func knownKeys(fields map[string]fieldInfo) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(clip(n.Value))
	}
	return "something else"
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t.PkgPath() == "time" && t.Name() == "Duration" {
			return "a duration such as 90s or 1h"
		}
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a value"
}

// reason is what a type's own decoder said, without the Go type names
// and line numbers yaml.v3 adds (the Error adds the path and the line).
func reason(err error, n *yaml.Node) string {
	if fe, ok := errors.AsType[*claimcheck.FieldError](err); ok {
		return fmt.Sprintf("%s, got %q", fe.Reason, clip(n.Value))
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, fmt.Sprintf("line %d: ", n.Line)); ok {
		msg = rest
	}
	if rest, ok := strings.CutPrefix(msg, claimcheck.ErrInvalidArgument.Error()+": "); ok {
		msg = rest
	}
	if strings.Contains(msg, "cannot unmarshal") {
		return fmt.Sprintf("the value %s does not fit here", describe(n))
	}
	return msg
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// mergeSources is what a merge key (<<) merges: the node its value
// names, or each node of a sequence of them, aliases followed. The
// caller decides what a source that is not a mapping means.
func mergeSources(value *yaml.Node) []*yaml.Node {
	value = resolveAlias(value)
	sources := []*yaml.Node{value}
	if value.Kind == yaml.SequenceNode {
		sources = make([]*yaml.Node, len(value.Content))
		for i, m := range value.Content {
			sources[i] = resolveAlias(m)
		}
	}
	return sources
}

// resolveAlias follows an alias node to the node it names.
func resolveAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}
