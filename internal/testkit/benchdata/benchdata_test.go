package benchdata_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/benchdata"
)

func TestJSONRecords(t *testing.T) {
	for _, n := range []int{23, 64, 1000, 64 << 10, 1 << 20} {
		doc := benchdata.JSONRecords(n)
		if len(doc) != n {
			t.Fatalf("JSONRecords(%d) has %d bytes", n, len(doc))
		}
		if !json.Valid(doc) {
			t.Fatalf("JSONRecords(%d) is not valid JSON: %.80q…", n, doc)
		}
		if !bytes.Equal(doc, benchdata.JSONRecords(n)) {
			t.Fatalf("JSONRecords(%d) differs between calls", n)
		}
	}
}
