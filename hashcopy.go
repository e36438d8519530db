package claimcheck

import (
	"hash"
	"io"
	"runtime"
	"sync"
)

// HashCopyChunk is the unit that is read, written and hashed. Small enough
// that the pipeline fills and drains quickly (the last chunk's hash is
// what the I/O cannot hide), large enough that a megabyte is a handful of
// system calls.
const HashCopyChunk = 128 << 10

// hashCopyDepth is how many chunks are in flight: one being read and
// written, the others being hashed or waiting for the hasher. Eight (1 MiB) let
// the copier run through a megabyte without waiting for the hasher, so
// a megabyte costs two thread wake-ups (the hasher's start, the
// copier's end) instead of one per chunk, which on a machine with more
// runnable threads than cores each wait for a core: measured at a load
// average of 8 on 2 cores, 8 chunks took 2.6–4.1 ms per put + redeem
// round where 4 took 3.0–4.4 (ADR 0155). Chunks are taken from the pool
// only as the stream needs them, so a small payload holds few.
const hashCopyDepth = 8

// hashCopyBuffers recycles chunks between streams: fresh memory costs page
// faults on every first touch, which is as much as the copy itself.
var hashCopyBuffers = sync.Pool{New: func() any { b := make([]byte, HashCopyChunk); return &b }}

// HashCopy copies src to dst until src ends (io.EOF) or either fails, and
// writes every byte it hands to dst to h as well. Reading and writing
// happen in the calling goroutine; hashing in another, on chunks that
// neither side touches until both are done with them, so that a put or a
// redeem costs about the longer of the hash and the I/O instead of their
// sum (ADR 0155): sha256 runs at about 1.8 GB/s on a core with SHA
// extensions, slower than a page-cache write or read of the same bytes,
// so on a machine with a second core the hash hides the I/O, or the I/O
// the hash. Payload's WriteTo (stored or received bytes to the caller,
// verifying them) and the engine's put (body to object, hashing the
// payload) use it. It needs only the standard library.
//
// It returns the number of bytes read from src and written to dst, and
// the first error: src's (other than io.EOF) or dst's, unwrapped. When
// HashCopy returns nil, h has been written exactly the n bytes, in
// order. When it returns an error h's state is unspecified. In both cases
// the hashing goroutine has ended before HashCopy returns: nothing
// outlives the call, whatever the caller's context does to src or dst.
func HashCopy(dst io.Writer, src io.Reader, h hash.Hash) (n int64, err error) {
	first := hashCopyBuffers.Get().(*[]byte)
	m, rerr := hashCopyFill(src, *first)
	if rerr != nil && rerr != io.EOF {
		hashCopyBuffers.Put(first)
		return 0, rerr
	}
	if rerr == io.EOF {
		// All of it in one chunk (a small payload): a goroutine would
		// cost more than it hides.
		defer hashCopyBuffers.Put(first)
		h.Write((*first)[:m])
		return hashCopyWrite(dst, (*first)[:m])
	}
	if runtime.GOMAXPROCS(0) < 2 {
		// One core for Go: the hash could only take turns with the I/O.
		defer hashCopyBuffers.Put(first)
		return hashCopySequential(dst, src, h, *first, m)
	}

	type chunk struct {
		buf *[]byte
		n   int
	}
	work := make(chan chunk, hashCopyDepth)
	free := make(chan *[]byte, hashCopyDepth)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range work {
			h.Write((*c.buf)[:c.n])
			free <- c.buf
		}
	}()
	// The hasher owns a chunk from its send on work until it is back on
	// free; the copier never reads into a chunk the hasher still holds.
	// Every chunk taken from the pool is on free once the hasher ended
	// (free holds them all), and goes back to the pool.
	allocated := 1
	defer func() {
		close(work)
		<-done
		for range allocated {
			hashCopyBuffers.Put(<-free)
		}
	}()

	buf := first
	for {
		// Hashed while it is written: the hasher and dst read the chunk,
		// nobody writes it until it comes back on free.
		work <- chunk{buf, m}
		if m > 0 {
			w, err := hashCopyWrite(dst, (*buf)[:m])
			n += w
			if err != nil {
				return n, err
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if allocated < hashCopyDepth {
			buf = hashCopyBuffers.Get().(*[]byte)
			allocated++
		} else {
			buf = <-free
		}
		m, rerr = hashCopyFill(src, *buf)
		if rerr != nil && rerr != io.EOF {
			free <- buf // never sent to the hasher
			return n, rerr
		}
	}
}

// hashCopySequential is HashCopy in the calling goroutine alone, from
// buf holding the first m bytes.
func hashCopySequential(dst io.Writer, src io.Reader, h hash.Hash, buf []byte, m int) (n int64, err error) {
	for {
		h.Write(buf[:m])
		w, err := hashCopyWrite(dst, buf[:m])
		n += w
		if err != nil {
			return n, err
		}
		var rerr error
		m, rerr = hashCopyFill(src, buf)
		if rerr == io.EOF {
			h.Write(buf[:m])
			w, err := hashCopyWrite(dst, buf[:m])
			return n + w, err
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// hashCopyWrite writes p to dst whole or fails.
func hashCopyWrite(dst io.Writer, p []byte) (int64, error) {
	w, err := dst.Write(p)
	if err == nil && w < len(p) {
		err = io.ErrShortWrite
	}
	return int64(w), err
}

// hashCopyFill reads into buf until it is full or src ends or fails. Full
// chunks mean fewer, larger writes and hashes downstream.
func hashCopyFill(src io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
