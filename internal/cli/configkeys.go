package cli

import (
	"reflect"

	"github.com/claimcheck/claimcheck/internal/config"
)

// ConfigKeys lists every key path the config file of serve and the
// operator commands accepts (config.Keys of the whole file's type), so
// that the tests can hold docs/CONFIGURATION.md to it.
func ConfigKeys() []string {
	return config.Keys(reflect.TypeFor[fileConfig]())
}

// CheckConfig decodes a config file's YAML strictly, without environment
// overrides, as serve would before it opens anything: unknown keys and
// values that do not parse are errors naming the key path.
func CheckConfig(data []byte) error {
	var fc fileConfig
	return config.Decode(data, nil, &fc)
}
