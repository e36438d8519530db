package claimcheck

import (
	"errors"
	"fmt"
	"io"
)

// ErrRangeNotSatisfiable is returned by a ranged redeem that asks for no
// byte of the payload (an offset at or past its end, or any range of an
// empty payload). The error is a *RangeError, which carries the size.
var ErrRangeNotSatisfiable = errors.New("range not satisfiable")

// RangeError is a ranged redeem outside the payload.
type RangeError struct {
	ID     string
	Offset int64 // as asked; negative for a suffix
	Size   int64 // the payload's size
}

func (e *RangeError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("claim %s: %v: the last %d bytes of an empty payload", e.ID, ErrRangeNotSatisfiable, -e.Offset)
	}
	return fmt.Sprintf("claim %s: %v: offset %d, but the payload has %d bytes", e.ID, ErrRangeNotSatisfiable, e.Offset, e.Size)
}

func (e *RangeError) Is(target error) bool { return target == ErrRangeNotSatisfiable }

// ResolveRange turns a RedeemRange request into the absolute bytes
// [start, start+n) of a payload of size bytes. It is shared by the
// store, the server and the client, so all three cut a range the same way.
func ResolveRange(id string, offset, length, size int64) (start, n int64, err error) {
	if offset >= 0 && length == 0 {
		return 0, 0, fmt.Errorf("%w: range length 0 selects nothing; use a negative length to read to the end", ErrInvalidArgument)
	}
	if offset < 0 {
		if size == 0 {
			return 0, 0, &RangeError{ID: id, Offset: offset, Size: size}
		}
		n = min(-offset, size)
		return size - n, n, nil
	}
	if offset >= size {
		return 0, 0, &RangeError{ID: id, Offset: offset, Size: size}
	}
	n = size - offset
	if length > 0 && length < n {
		n = length
	}
	return offset, n, nil
}

// Part is bytes [Offset, Offset+Length) of the payload of Ref. Read
// returns io.EOF only after exactly Length bytes, and only once whatever
// check the store could make of them passed; a short or long stream
// fails with ErrChecksumMismatch.
type Part struct {
	Ref         Ref // the whole payload's reference
	ContentType string
	Offset      int64
	Length      int64

	body io.ReadCloser
	n    int64
	err  error
}

// NewPart wraps body, the bytes [offset, offset+length) of ref's payload.
func NewPart(ref Ref, contentType string, offset, length int64, body io.ReadCloser) *Part {
	return &Part{Ref: ref, ContentType: contentType, Offset: offset, Length: length, body: body}
}

// End is the offset after the part's last byte.
func (p *Part) End() int64 { return p.Offset + p.Length }

// Read reads the part's bytes.
func (p *Part) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.body.Read(b)
	p.n += int64(n)
	if p.n > p.Length {
		p.err = fmt.Errorf("claim %s: %w: more than the %d bytes of the range", p.Ref.ID, ErrChecksumMismatch, p.Length)
		return 0, p.err
	}
	switch {
	case err == io.EOF && p.n != p.Length:
		p.err = fmt.Errorf("claim %s: %w: range stream ended after %d of %d bytes", p.Ref.ID, ErrChecksumMismatch, p.n, p.Length)
		return n, p.err
	case err != nil:
		p.err = err
	}
	return n, err
}

// Close releases the underlying stream.
func (p *Part) Close() error { return p.body.Close() }

// PartOfPayload cuts bytes [start, start+n) out of p, the whole verifying
// payload, for a store that cannot read a part alone (a compressed
// stream cannot be entered in the middle; a server that ignored the
// Range answered everything). The bytes before the part are discarded,
// and before the part reports its end it reads the rest of p: io.EOF
// then means the whole payload matched its size and sha256, as for a
// full redeem, at the whole payload's cost.
func PartOfPayload(p *Payload, start, n int64) *Part {
	return NewPart(p.Ref, p.ContentType, start, n, &payloadPart{p: p, skip: start, left: n})
}

type payloadPart struct {
	p    *Payload
	skip int64
	left int64
	err  error
}

func (v *payloadPart) Read(b []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.skip > 0 {
		m, err := io.CopyN(io.Discard, v.p, v.skip)
		v.skip -= m
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			v.err = err
			return 0, err
		}
	}
	if v.left == 0 {
		// The part is delivered; the rest only checks the whole.
		if _, err := io.Copy(io.Discard, v.p); err != nil {
			v.err = err
			return 0, err
		}
		v.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(b)) > v.left {
		b = b[:v.left]
	}
	n, err := v.p.Read(b)
	v.left -= int64(n)
	switch {
	case err == io.EOF && v.left > 0:
		// The verifying reader ends only on success, which cannot come
		// before the part it covers.
		err = io.ErrUnexpectedEOF
	case err == io.EOF:
		err = nil // reported by the next Read, after the final check
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *payloadPart) Close() error { return v.p.Close() }
