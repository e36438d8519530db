package client

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"

	"github.com/claimcheck/claimcheck"
)

// withDigest fills in opts.Digest and opts.Size for bodies held in memory
// (*bytes.Reader, *bytes.Buffer, *strings.Reader), hashing their unread
// bytes without consuming them. A put that sends its digest first lets the
// server answer a dedup hit before the body is sent (the request carries
// Expect: 100-continue), so identical payloads cross the network once.
// Other readers are streamed as they are: hashing them would mean reading
// them twice.
//
// With hash false (the namespace never answers before the body, ADR 0155)
// only opts.Size is filled in: the digest would buy nothing and cost a
// pass over the payload before its first byte is sent.
func withDigest(body io.Reader, opts claimcheck.PutOptions, hash bool) claimcheck.PutOptions {
	if opts.Digest != "" {
		return opts
	}
	var (
		n      int64
		unread io.Reader
	)
	switch b := body.(type) {
	case *bytes.Reader:
		n = int64(b.Len())
		unread = io.NewSectionReader(b, b.Size()-n, n)
	case *strings.Reader:
		n = int64(b.Len())
		unread = io.NewSectionReader(b, b.Size()-n, n)
	case *bytes.Buffer:
		n = int64(b.Len())
		unread = bytes.NewReader(b.Bytes())
	default:
		return opts
	}
	if opts.Size > 0 && opts.Size != n {
		return opts // the put fails on the length; don't add a second complaint
	}
	opts.Size = n
	if !hash {
		return opts
	}
	h := sha256.New()
	if _, err := io.Copy(h, unread); err != nil {
		return opts
	}
	opts.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return opts
}

// inMemory reports whether body is one of the in-memory readers
// withDigest knows.
func inMemory(body io.Reader) bool {
	switch body.(type) {
	case *bytes.Reader, *strings.Reader, *bytes.Buffer:
		return true
	}
	return false
}

// sentDigest hashes the body as the transport reads it to send it. The
// transport reads in its own goroutine, which may still be inside Read
// when the answer arrives: the lock orders that read before check.
type sentDigest struct {
	r io.Reader

	mu sync.Mutex
	h  hash.Hash
	n  int64
}

func (s *sentDigest) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.r.Read(p)
	s.h.Write(p[:n])
	s.n += int64(n)
	return n, err
}

// check compares the stored payload, as the server's answer describes
// it, with the bytes sent.
func (s *sentDigest) check(ref claimcheck.Ref) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n != ref.Size {
		return fmt.Errorf("%w: %d bytes sent, the claim %s holds %d", claimcheck.ErrChecksumMismatch, s.n, ref.ID, ref.Size)
	}
	if got := "sha256:" + hex.EncodeToString(s.h.Sum(nil)); got != ref.Digest {
		return fmt.Errorf("%w: the bytes sent hash to %s, the claim %s holds %s", claimcheck.ErrChecksumMismatch, got, ref.ID, ref.Digest)
	}
	return nil
}
