// Package config loads claimcheck's YAML configuration file and applies
// environment overrides to it.
//
// Overrides are applied to the YAML tree before it is decoded, so an
// environment value is parsed exactly like the same value in the file
// ("50KiB", "90s", "false"). A variable CLAIMCHECK_A__B__C sets key c of
// mapping b of mapping a: levels are separated by a double underscore,
// keys match case-insensitively with '-' and '_' treated alike, and
// missing mappings are created.
//
// Every CLAIMCHECK_ variable is a config key, except the few that other
// parts of claimcheck read (Foreign): a variable that names no key is an
// error naming the variable, like an unknown key in the file, so a typo
// in a deployment's environment is not silently ignored.
//
// The merged tree is checked against the target type before it is
// decoded (strict.go): unknown keys, values of the wrong kind and values
// that do not parse are errors that name the key path as written, and
// the line or the variable it came from.
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

// Foreign are the CLAIMCHECK_ variables that are not config keys: the
// CLI client's server and API key, the Temporal integration's
// threshold; and Foreign prefixes those of the test suites and
// benchmarks. Decode ignores them; any other CLAIMCHECK_ variable must
// name a key.
var (
	Foreign         = []string{"CLAIMCHECK_SERVER", "CLAIMCHECK_API_KEY", "CLAIMCHECK_THRESHOLD_BYTES"}
	ForeignPrefixes = []string{"CLAIMCHECK_TEST_", "CLAIMCHECK_BENCH_", "CLAIMCHECK_GC_STRESS_"}
)

// foreign reports whether the variable name is not a config key.
func foreign(name string) bool {
	for _, f := range Foreign {
		if name == f {
			return true
		}
	}
	for _, p := range ForeignPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

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
	c := &checker{origin: map[*yaml.Node]string{}}
	for _, kv := range overrides(env) {
		if err := set(root, kv.path, kv.value, kv.name, c.origin); err != nil {
			return &Error{Path: strings.Join(kv.path, "."), Reason: err.Error(), Variable: kv.name}
		}
	}
	if err := c.check(root, reflect.TypeOf(out), "", "", false); err != nil {
		return err
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
	markGiven(root, reflect.ValueOf(out))
	return nil
}

type override struct {
	name  string // the variable, as written
	path  []string
	value string
}

// overrides returns the CLAIMCHECK_ variables as paths, in a stable order.
func overrides(env []string) []override {
	var out []override
	for _, e := range env {
		name, value, ok := strings.Cut(e, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || foreign(name) {
			continue
		}
		path := strings.Split(name[len(EnvPrefix):], "__")
		for i := range path {
			path[i] = strings.ToLower(path[i])
		}
		out = append(out, override{name: name, path: path, value: value})
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Join(out[i].path, ".") < strings.Join(out[j].path, ".")
	})
	return out
}

// set writes value at path under the mapping node m, recording in
// origin that the nodes it writes came from the variable name.
func set(m *yaml.Node, path []string, value, name string, origin map[*yaml.Node]string) error {
	for _, p := range path {
		if p == "" {
			return errors.New("empty level in the variable name (a key path is KEY__KEY__KEY)")
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
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
			origin[k] = name
			m.Content = append(m.Content, k, child)
		}
		if last {
			// Parse the value as YAML so "false", "3" and "50KiB" mean what
			// they would in the file.
			var v yaml.Node
			if err := yaml.Unmarshal([]byte(value), &v); err != nil || len(v.Content) != 1 {
				*child = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
			} else {
				*child = *v.Content[0]
			}
			origin[child] = name
			return nil
		}
		m = child
	}
	return nil
}

func normalize(key string) string {
	return strings.ReplaceAll(strings.ToLower(key), "-", "_")
}
