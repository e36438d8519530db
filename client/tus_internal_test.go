package client

import (
	"encoding/base64"
	"maps"
	"strings"
	"testing"
)

// The Upload-Metadata of an answer is parsed without trusting it: any
// header gives a map (pairs that do not parse are left out), and writing
// that map in tus's format again parses to the same map.
func FuzzParseMetadata(f *testing.F) {
	f.Add("sha256 ZTNiMGM0NDI5OGZj,content_type dmlkZW8vbXA0")
	f.Add("")
	f.Add(",,k,k v, v ,filename Y2xpcC5tcDQ=")
	f.Fuzz(func(t *testing.T, v string) {
		m := parseMetadata(v)
		var pairs []string
		for k, val := range m {
			if k == "" || strings.ContainsAny(k, ", ") {
				t.Fatalf("parseMetadata(%q) has key %q", v, k)
			}
			pairs = append(pairs, k+" "+base64.StdEncoding.EncodeToString([]byte(val)))
		}
		if back := parseMetadata(strings.Join(pairs, ",")); !maps.Equal(m, back) {
			t.Fatalf("parseMetadata(%q) = %v, but its own serialization parses to %v", v, m, back)
		}
	})
}
