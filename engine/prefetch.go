package engine

import (
	"crypto/sha256"
	"hash"
	"io"
	"sync"

	"github.com/claimcheck/claimcheck/internal/hashcopy"
)

// prefetchMax is the largest in-memory body a put reads and hashes while
// its rows are written: the megabyte a put's copy holds in flight anyway
// (internal/hashcopy), so a put holds no more memory than before.
const prefetchMax = 8 * hashcopy.ChunkSize

// prefetchBuffers recycles the prefetch buffers: fresh memory costs a
// page fault per page on first touch, as much as the copy itself.
var prefetchBuffers = sync.Pool{New: func() any { b := make([]byte, prefetchMax); return &b }}

// prefetched is the start of a put's body, read into a buffer of the
// engine's own and hashed while CreatePending ran (ADR 0165). The object
// is written from that buffer, so the sha256 covers exactly the bytes
// stored, as when it is taken while they are copied.
type prefetched struct {
	done chan struct{}
	buf  *[]byte
	n    int
	h    hash.Hash // the sha256 of buf[:n]
	err  error     // the body's, other than io.EOF
}

// prefetch starts reading and hashing body if it is held in memory (a
// bytes.Reader or strings.Reader: the Len of what is left, nothing to
// wait for) and fits in prefetchMax, and returns nil otherwise. It is
// only for puts that ask nothing before the body: an HTTP body is
// never read before the answer to its Expect: 100-continue is known,
// and the server's bodies have no Len.
func prefetch(body io.Reader, declared int64) *prefetched {
	lb, ok := body.(interface{ Len() int })
	if !ok {
		return nil
	}
	n := lb.Len()
	if n <= 0 || n > prefetchMax || declared > 0 && declared != int64(n) {
		return nil
	}
	p := &prefetched{done: make(chan struct{}), buf: prefetchBuffers.Get().(*[]byte), h: sha256.New()}
	go func() {
		defer close(p.done)
		p.n, p.err = io.ReadFull(body, (*p.buf)[:n])
		if p.err == io.ErrUnexpectedEOF {
			p.err = nil // shorter than its Len said: the rest of the put sees that
		}
		p.h.Write((*p.buf)[:p.n])
	}()
	return p
}

// wait returns once the prefetch has ended.
func (p *prefetched) wait() {
	if p != nil {
		<-p.done
	}
}

// release returns the buffer, once nothing reads it any more.
func (p *prefetched) release() {
	if p != nil {
		<-p.done
		prefetchBuffers.Put(p.buf)
	}
}

// skipHash is the sha256 of a body whose first skip bytes it has
// already: the copy writes the whole body to it, and those are passed
// over.
type skipHash struct {
	hash.Hash
	skip int
}

func (s *skipHash) Write(p []byte) (int, error) {
	n := min(s.skip, len(p))
	s.skip -= n
	if n < len(p) {
		s.Hash.Write(p[n:])
	}
	return len(p), nil
}
