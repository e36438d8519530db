package client

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// withDigest fills in opts.Digest and opts.Size for bodies held in memory
// (*bytes.Reader, *bytes.Buffer, *strings.Reader), hashing their unread
// bytes without consuming them. A put that sends its digest first lets the
// server answer a dedup hit before the body is sent (the request carries
// Expect: 100-continue), so identical payloads cross the network once.
// Other readers are streamed as they are: hashing them would mean reading
// them twice.
func withDigest(body io.Reader, opts claimcheck.PutOptions) claimcheck.PutOptions {
	if opts.Digest != "" {
		return opts
	}
	h := sha256.New()
	var n int64
	switch b := body.(type) {
	case *bytes.Reader:
		// WriteTo hands the hash the reader's own bytes, without the
		// copy through a buffer that reading them would cost (a
		// megabyte of memmove per MiB put); Seek puts the reader back
		// where it was.
		n = int64(b.Len())
		start := b.Size() - n
		if _, err := b.WriteTo(h); err != nil {
			return opts
		}
		if _, err := b.Seek(start, io.SeekStart); err != nil {
			return opts
		}
	case *strings.Reader:
		n = int64(b.Len())
		if _, err := io.Copy(h, io.NewSectionReader(b, b.Size()-n, n)); err != nil {
			return opts
		}
	case *bytes.Buffer:
		n = int64(b.Len())
		h.Write(b.Bytes())
	default:
		return opts
	}
	if opts.Size > 0 && opts.Size != n {
		return opts // the put fails on the length; don't add a second complaint
	}
	opts.Size = n
	opts.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return opts
}
