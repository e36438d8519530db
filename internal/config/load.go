// Package config loads claimcheck's YAML configuration file and applies
// environment overrides to it.
//
// Overrides are applied to the YAML tree before it is decoded, so an
// environment value is parsed exactly like the same value in the file
// ("50KiB", "90s", "false"). A variable CLAIMCHECK_A__B__C sets key c of
// mapping b of mapping a: levels are separated by a double underscore,
// keys match case-insensitively with '-' and '_' treated alike, and
// missing mappings are created. Only variables whose first level is a
// top-level key of the target struct are applied, so variables meant for
// other programs (CLAIMCHECK_SERVER for the CLI client, say) are ignored.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// EnvPrefix starts every override variable.
const EnvPrefix = "CLAIMCHECK_"

// Load reads the YAML file at path (none when path is ""), applies the
// overrides found in env (KEY=VALUE strings, as os.Environ returns) and
// decodes the result into out, a pointer to a struct with yaml tags.
// Unknown keys are errors that name the key and line.
func Load(path string, env []string, out any) error {
	var data []byte
	if path != "" {
		var err error
		data, err = os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	if err := Decode(data, env, out); err != nil {
		if path != "" {
			return fmt.Errorf("config %s: %w", path, err)
		}
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Decode is Load on YAML bytes.
func Decode(data []byte, env []string, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root.Kind == 0 { // empty input
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the config must be a mapping of keys to values", root.Line)
	}
	top := topLevelKeys(reflect.TypeOf(out))
	for _, kv := range overrides(env) {
		if !top[normalize(kv.path[0])] {
			continue
		}
		if err := set(root, kv.path, kv.value); err != nil {
			return fmt.Errorf("environment %s%s: %w", EnvPrefix, strings.Join(kv.path, "__"), err)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(root); err != nil {
		return err
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

type override struct {
	path  []string
	value string
}

// overrides returns the CLAIMCHECK_ variables as paths, in a stable order.
func overrides(env []string) []override {
	var out []override
	for _, e := range env {
		name, value, ok := strings.Cut(e, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || len(name) == len(EnvPrefix) {
			continue
		}
		path := strings.Split(name[len(EnvPrefix):], "__")
		for i := range path {
			path[i] = strings.ToLower(path[i])
		}
		out = append(out, override{path: path, value: value})
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Join(out[i].path, ".") < strings.Join(out[j].path, ".")
	})
	return out
}

// set writes value at path under the mapping node m.
func set(m *yaml.Node, path []string, value string) error {
	for _, p := range path {
		if p == "" {
			return errors.New("empty level in the variable name")
		}
	}
	for i, key := range path {
		if m.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping in the config file", path[i-1])
		}
		var child *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if normalize(m.Content[j].Value) == normalize(key) {
				child = m.Content[j+1]
				break
			}
		}
		last := i == len(path)-1
		if child == nil {
			child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if last {
				child = &yaml.Node{}
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, child)
		}
		if last {
			// Parse the value as YAML so "false", "3" and "50KiB" mean what
			// they would in the file.
			var v yaml.Node
			if err := yaml.Unmarshal([]byte(value), &v); err != nil || len(v.Content) != 1 {
				*child = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
				return nil
			}
			*child = *v.Content[0]
			return nil
		}
		m = child
	}
	return nil
}

func normalize(key string) string {
	return strings.ReplaceAll(strings.ToLower(key), "-", "_")
}

// topLevelKeys returns the normalized yaml keys of struct type t
// (following pointers and inline fields).
func topLevelKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return keys
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k := range topLevelKeys(f.Type) {
				keys[k] = true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys[normalize(name)] = true
	}
	return keys
}
