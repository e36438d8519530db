package client

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"

	"github.com/claimcheck/claimcheck"
)

// withSize fills in opts.Size for bodies held in memory, as withDigest
// does, without hashing them: for a namespace that never answers a put
// before its body, where the digest would buy nothing and cost a pass
// over the payload before its first byte is sent (ADR 0155). It also
// reports whether body is one of those in-memory readers.
func withSize(body io.Reader, opts claimcheck.PutOptions) (claimcheck.PutOptions, bool) {
	var n int64
	switch b := body.(type) {
	case *bytes.Reader:
		n = int64(b.Len())
	case *strings.Reader:
		n = int64(b.Len())
	case *bytes.Buffer:
		n = int64(b.Len())
	default:
		return opts, false
	}
	if opts.Size == 0 {
		opts.Size = n
	}
	// A declared size that differs fails the put on the length.
	return opts, true
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
