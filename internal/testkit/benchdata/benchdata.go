// Package benchdata generates the payloads that benchmarks compare codecs
// and stores on, so that a codec's numbers and the end-to-end numbers
// (docs/PERFORMANCE-HISTORY.md, ADR 0135) are measured on the same bytes.
// Everything here is deterministic: the same size gives the same bytes.
package benchdata

import (
	"bytes"
	"fmt"
)

// JSONRecords returns a JSON document of exactly n bytes (n ≥ 23), of the
// kind that gets offloaded: an array of records with repeated keys and
// varied values (ids, customer numbers, amounts, a status), padded to
// size inside a trailing string field.
func JSONRecords(n int) []byte {
	const head, tail = `{"records":[`, `],"pad":""}`
	var buf, rec bytes.Buffer
	buf.Grow(n)
	buf.WriteString(head)
	for i := 0; ; i++ {
		rec.Reset()
		if i > 0 {
			rec.WriteByte(',')
		}
		fmt.Fprintf(&rec, `{"id":%d,"customer":"c-%06d","amount":%d.%02d,"status":"%s"}`,
			i, i*7919%1000003, i%9973, i%100, []string{"paid", "open", "refunded"}[i%3])
		if buf.Len()+rec.Len()+len(tail) > n {
			break
		}
		buf.Write(rec.Bytes())
	}
	buf.WriteString(`],"pad":"`)
	for buf.Len() < n-2 {
		buf.WriteByte('x')
	}
	buf.WriteString(`"}`)
	return buf.Bytes()
}
