package compress_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/claimcheck/claimcheck/compress"
)

// A payload is compressed on its way to object storage and decompressed
// on its way back; the algorithm is recorded in the reference.
func Example() {
	payload := strings.Repeat(`{"event":"frame","ok":true}`, 1000)
	alg := compress.Choose(compress.Auto, []byte(payload[:min(len(payload), compress.SampleSize)]))

	var stored bytes.Buffer
	w, err := compress.NewWriter(alg, &stored)
	if err != nil {
		panic(err)
	}
	if _, err := io.Copy(w, strings.NewReader(payload)); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil { // finishes the stream; stored stays open
		panic(err)
	}

	storedSize := stored.Len()
	r, err := compress.NewReader(alg, &stored)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	back, err := io.ReadAll(r)
	if err != nil {
		panic(err)
	}
	fmt.Println(alg, len(payload), storedSize < len(payload)/10, string(back) == payload)
	// Output: zstd 27000 true true
}
