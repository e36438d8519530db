package config

import (
	"reflect"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
)

type keysTarget struct {
	Inline `yaml:",inline"`
	Size   claimcheck.Size              `yaml:"size"`
	Named  map[string]keysPolicy        `yaml:"named"`
	Labels map[string]string            `yaml:"labels"`
	Items  []keysItem                   `yaml:"items"`
	Tags   []string                     `yaml:"tags"`
	Shaped keysShaped                   `yaml:"shaped"`
	Hidden string                       `yaml:"-"`
	ByTTL  map[string]claimcheck.Policy `yaml:"-"`
}

type Inline struct {
	Top string `yaml:"top"`
}

type keysPolicy struct {
	Quota claimcheck.Quota `yaml:"quota"`
}

type keysItem struct {
	ID string `yaml:"id"`
}

type keysShaped struct{ On bool }

func (keysShaped) ConfigShape(n *yaml.Node) any {
	if n.Kind == yaml.MappingNode {
		return keysItem{}
	}
	return nil
}

func (*keysShaped) UnmarshalYAML(*yaml.Node) error { return nil }

// TestKeys pins the key paths of each kind of field: inline, a scalar
// type that decodes itself, a mapping of names, a mapping of scalars, a
// list of mappings, a list of scalars, a Shaper, and fields left out.
func TestKeys(t *testing.T) {
	got := Keys(reflect.TypeFor[keysTarget]())
	want := []string{"items.id", "labels", "named.*.quota.bytes", "named.*.quota.claims", "shaped.id", "size", "tags", "top"}
	if !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
}
