// Package claimcheck is a lifecycle-managed claim-check store for payloads
// too large for a message bus or workflow engine.
//
// A producer puts a payload and gets back a small Ref; a consumer redeems
// the Ref and gets the exact bytes back, verified against their sha256.
// Every stored byte has an owner and a deadline: claims expire (max_age),
// can be finished after their first read with a redelivery window, and are
// released by consumer acks; finished claims give their blobs back, and
// unreferenced blobs are collected after a grace period.
//
// This package is the public contract and nothing else: the Ref and its
// parsing, three interfaces named for who uses them (Claims for
// producers, consumers and the owners of claims; Uploads for clients that
// send a payload from elsewhere; Admin for operators), the Policy types,
// the sentinel errors and the offload helpers. It imports no project
// package and no storage, SQL, cloud or crypto library, so a service that
// only talks to a claimcheck server links little more than net/http.
//
// Two implementations satisfy all three: the embedded *engine.Store
// returned by engine.Open (package engine: SQLite and local files by
// default, PostgreSQL and S3 in production), and client.Client, which
// talks to a `claimcheck serve` process over HTTP. Integrations
// (Temporal, NATS, Kafka) take a Claims and do not care which one they
// get.
package claimcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Claims is what producers, consumers and the owners of claims use (an
// owner lists and extends the claims of what it keeps alive, such as a
// Temporal workflow run). Both *engine.Store (embedded) and client.Client
// (remote) implement it.
type Claims interface {
	// Put stores the payload read from body in namespace ns and returns
	// its reference. The body is streamed: it is never held in memory
	// whole. A payload over the namespace's max_size fails with
	// ErrTooLarge and leaves nothing stored.
	Put(ctx context.Context, ns string, body io.Reader, opts PutOptions) (Ref, error)

	// Redeem opens the claim's payload for reading. Only ref.ID (and
	// ref.Namespace, when set) are used. The returned Payload verifies the
	// bytes as they stream: its Read returns io.EOF only after the whole
	// payload matched its size and sha256, and ErrChecksumMismatch
	// otherwise. A finished claim fails with a *GoneError, an unknown one
	// with ErrNotFound.
	Redeem(ctx context.Context, ref Ref) (*Payload, error)

	// Stat returns the claim's state, deadlines and counters. It works on
	// finished claims too (State is "deleted" and DeleteReason says why).
	Stat(ctx context.Context, ref Ref) (ClaimInfo, error)

	// Release records that consumer has finished with the claim (an ack).
	// It is idempotent per consumer name. When the expected number of
	// consumers have released it, the claim is finished after the
	// namespace's retention_after_read window.
	Release(ctx context.Context, ref Ref, consumer string) error

	// Delete finishes the claim now (reason "deleted"). Deleting a claim
	// that is already finished is not an error.
	Delete(ctx context.Context, ref Ref) error

	// Policy returns the effective policy of namespace ns: the one in the
	// config, or the defaults section for a namespace the config does not
	// name. It fails with ErrNotFound when defaults are switched off and
	// ns is not configured.
	Policy(ctx context.Context, ns string) (Policy, error)

	// RedeemRange opens bytes [offset, offset+length) of the claim's
	// payload. length < 0 reads to the end; length past the end is cut
	// at the end. offset < 0 asks for the last -offset bytes (all of
	// them when the payload is shorter), and length is then ignored. A
	// range that selects no byte fails with a *RangeError. length 0 is an
	// ErrInvalidArgument.
	//
	// A part cannot be checked against the payload's sha256, which
	// covers the whole; what a part is verified against depends on how
	// the object is stored (see docs/HTTP.md, "Ranged redeem"). Only a
	// part that reaches the last byte counts as a read of the claim.
	RedeemRange(ctx context.Context, ref Ref, offset, length int64) (*Part, error)

	// List returns one page of the claims of ns that match opts, in
	// opts.Order (newest first by default), and the cursor of the next
	// page ("" on the last page). Every filter is answered from an index,
	// never by reading every claim of the store. On the HTTP API
	// producer and admin keys of the namespace may list (a key never
	// sees another tenant's claims). ADR 0100.
	List(ctx context.Context, ns string, opts ListOptions) (ClaimPage, error)

	// Extend moves the claim's expiry later and answers the claim as it
	// is afterwards. An extension never shortens: asking for an expiry at
	// or before the current one changes nothing (so repeating an
	// extension is harmless). The new expiry must not pass the
	// namespace's ttl.max_lifetime counted from the claim's creation
	// (ErrInvalidArgument naming the limit). A finished claim answers a
	// *GoneError, an unknown or pending one ErrNotFound. The claim's
	// other deadlines stay: a delete_after_read window or a release that
	// already set an earlier deadline still finishes it then. Every
	// extension is an "extended" audit event. On the HTTP API producer
	// and admin keys of the claim's namespace may extend. ADR 0101.
	Extend(ctx context.Context, ref Ref, opts ExtendOptions) (ClaimInfo, error)
}

// PutOptions are the optional parts of a put.
type PutOptions struct {
	// Size is the payload's length when the caller knows it (0 when not).
	// A body of another length fails the put with ErrInvalidArgument.
	Size int64
	// Digest is "sha256:<hex>" of the payload when the caller knows it. A
	// body that hashes differently fails with ErrChecksumMismatch.
	Digest string
	// ContentType is stored with the claim and returned on redeem.
	ContentType string
	// Labels are small user metadata stored with the claim.
	Labels map[string]string
	// Consumers is the number of distinct releases that finish the claim
	// (fan-out). 0 means 1.
	Consumers int
	// ConsumerNames, when set, names the consumers whose releases count;
	// Consumers is then its length.
	ConsumerNames []string
}

// ClaimState is the life stage of a claim.
type ClaimState string

// The claim states. pending: being written (or a direct upload not yet
// confirmed); active: redeemable; deleted: finished, never redeemable
// again.
const (
	StatePending ClaimState = "pending"
	StateActive  ClaimState = "active"
	StateDeleted ClaimState = "deleted"
)

// ClaimInfo is what Stat reports about a claim.
type ClaimInfo struct {
	Ref          Ref               `json:"ref"`
	State        ClaimState        `json:"state"`
	ContentType  string            `json:"content_type,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Reads        int64             `json:"reads"`
	FirstReadAt  time.Time         `json:"first_read_at,omitzero"`
	Releases     int               `json:"releases"`
	Consumers    int               `json:"consumers"`
	ReleasedBy   []string          `json:"released_by,omitempty"`
	DeleteAt     time.Time         `json:"delete_at,omitzero"` // when the claim will be finished, at the latest
	DeletedAt    time.Time         `json:"deleted_at,omitzero"`
	DeleteReason GoneReason        `json:"delete_reason,omitempty"`
	// Holds are the legal holds that keep the claim (Hold, admin.go); while
	// there is one, DeleteAt is the deadline it will have once lifted.
	Holds []Hold `json:"holds,omitempty"`
	// Object is the key of the claim's object in the store's blob storage
	// (below the storage URL's prefix) when that object is the payload
	// byte for byte: stored uncompressed and unencrypted. A reader with
	// access to the storage may then read the payload there until the
	// claim is finished (integrations/sqs points Amazon SQS Extended
	// Client consumers at it, ADR 0245). Empty otherwise, and in List.
	Object string `json:"object,omitempty"`
}

// Payload is a claim's content being read. Read verifies as it goes: it
// returns io.EOF only once the bytes matched the ref's size and digest,
// so a caller that reads to EOF without an error has the exact payload.
// A short, long or altered stream ends in an error wrapping
// ErrChecksumMismatch (or the transport's own error), never in io.EOF.
type Payload struct {
	Ref         Ref
	ContentType string

	body io.ReadCloser
	h    hash.Hash
	n    int64
	err  error
	// onMismatch is told once when verification fails (OnMismatch).
	onMismatch func(error)
}

// OnMismatch registers f, called once with the error when the payload
// fails its own verification (too many bytes, too few, another digest).
// The embedded store uses it to mark the stored object damaged; it is
// not called for transport errors or cancellations.
func (p *Payload) OnMismatch(f func(error)) { p.onMismatch = f }

func (p *Payload) mismatch(err error) error {
	p.err = err
	if f := p.onMismatch; f != nil {
		p.onMismatch = nil
		f(err)
	}
	return err
}

// NewPayload wraps body, the payload of ref, in a verifying reader. Both
// the embedded store and the HTTP client use it, so verification is the
// same on both sides of the wire.
func NewPayload(ref Ref, contentType string, body io.ReadCloser) *Payload {
	return &Payload{Ref: ref, ContentType: contentType, body: body, h: sha256.New()}
}

// Read reads verified payload bytes.
func (p *Payload) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.body.Read(b)
	p.h.Write(b[:n])
	p.n += int64(n)
	if p.n > p.Ref.Size {
		return 0, p.mismatch(fmt.Errorf("claim %s: %w: more than the %d bytes recorded", p.Ref.ID, ErrChecksumMismatch, p.Ref.Size))
	}
	switch {
	case err == io.EOF:
		if p.n != p.Ref.Size {
			return n, p.mismatch(fmt.Errorf("claim %s: %w: stream ended after %d of %d bytes", p.Ref.ID, ErrChecksumMismatch, p.n, p.Ref.Size))
		}
		if got := "sha256:" + hex.EncodeToString(p.h.Sum(nil)); got != p.Ref.Digest {
			return n, p.mismatch(fmt.Errorf("claim %s: %w: content hashes to %s, recorded %s", p.Ref.ID, ErrChecksumMismatch, got, p.Ref.Digest))
		}
		p.err = io.EOF
	case err != nil:
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("claim %s: stream cut after %d of %d bytes: %w", p.Ref.ID, p.n, p.Ref.Size, err)
		}
		p.err = err
	}
	return n, err
}

// WriteTo writes the rest of the payload to w, verified as Read verifies
// it: it returns nil only once exactly the recorded size was written and
// the sha256 of everything read matched; a short, long or altered stream
// ends in an error wrapping ErrChecksumMismatch, as from Read, after at
// most the recorded number of bytes. io.Copy uses it.
//
// The sha256 runs in a second goroutine beside the reads and w's writes
// (HashCopy, ADR 0155), so reading and verifying cost about the
// longer of the two rather than their sum. That goroutine has ended when
// WriteTo returns.
func (p *Payload) WriteTo(w io.Writer) (int64, error) {
	if p.err == io.EOF {
		return 0, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	src := &payloadSource{r: io.LimitReader(p.body, p.Ref.Size-p.n)}
	n, err := HashCopy(w, src, p.h)
	p.n += n
	switch {
	case err != nil && src.err != nil: // HashCopy stops at the first error
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("claim %s: stream cut after %d of %d bytes: %w", p.Ref.ID, p.n, p.Ref.Size, err)
		}
		p.err = err
		return n, err
	case err != nil:
		// w failed: the bytes read past what it took are gone, so the
		// payload cannot be read on.
		p.err = err
		return n, err
	case p.n < p.Ref.Size:
		return n, p.mismatch(fmt.Errorf("claim %s: %w: stream ended after %d of %d bytes", p.Ref.ID, ErrChecksumMismatch, p.n, p.Ref.Size))
	}
	// The recorded size is written; the stream must end here, with the
	// end a transport may still fail (the HTTP client's trailer check).
	var one [1]byte
	for {
		m, err := p.body.Read(one[:])
		if m > 0 {
			return n, p.mismatch(fmt.Errorf("claim %s: %w: more than the %d bytes recorded", p.Ref.ID, ErrChecksumMismatch, p.Ref.Size))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			p.err = err
			return n, err
		}
	}
	if got := "sha256:" + hex.EncodeToString(p.h.Sum(nil)); got != p.Ref.Digest {
		return n, p.mismatch(fmt.Errorf("claim %s: %w: content hashes to %s, recorded %s", p.Ref.ID, ErrChecksumMismatch, got, p.Ref.Digest))
	}
	p.err = io.EOF
	return n, nil
}

// payloadSource remembers the body's own read error, so that WriteTo can
// tell it from the writer's.
type payloadSource struct {
	r   io.Reader
	err error
}

func (s *payloadSource) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// Close releases the underlying stream.
func (p *Payload) Close() error { return p.body.Close() }

// Bytes reads the whole verified payload and closes it.
func (p *Payload) Bytes() ([]byte, error) {
	defer func() { _ = p.Close() }() // read to its end, or failed already
	buf := bytes.NewBuffer(make([]byte, 0, p.Ref.Size))
	if _, err := io.Copy(buf, p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Value is a payload that is either carried inline or offloaded to a
// claim. Exactly one of Inline and Ref is meaningful: Ref != nil means
// offloaded.
type Value struct {
	Inline []byte
	Ref    *Ref
}

// Offloaded reports whether the value is a reference.
func (v Value) Offloaded() bool { return v.Ref != nil }

// MaybeOffload stores data in a claim when it is at least the namespace's
// threshold and returns the reference; smaller data comes back inline,
// untouched. The digest and size are sent up front, so a remote store can
// skip the upload when it already holds the bytes.
func MaybeOffload(ctx context.Context, c Claims, ns string, data []byte) (Value, error) {
	pol, err := c.Policy(ctx, ns)
	if err != nil {
		return Value{}, fmt.Errorf("offload to %s: %w", ns, err)
	}
	return OffloadAt(ctx, c, ns, data, int64(pol.Threshold), PutOptions{})
}

// OffloadAt is MaybeOffload with the threshold given by the caller (a
// publisher that read the namespace policy once, or overrides it) and put
// options for the claim (fan-out consumers, content type, labels). Size
// and Digest are always set from data, whatever opts says.
func OffloadAt(ctx context.Context, c Claims, ns string, data []byte, threshold int64, opts PutOptions) (Value, error) {
	if int64(len(data)) < threshold {
		return Value{Inline: data}, nil
	}
	opts.Size, opts.Digest = int64(len(data)), DigestOf(data)
	ref, err := c.Put(ctx, ns, bytes.NewReader(data), opts)
	if err != nil {
		return Value{}, err
	}
	return Value{Ref: &ref}, nil
}

// Resolve returns the bytes of v: the inline bytes, or the verified
// payload of its claim.
func Resolve(ctx context.Context, c Claims, v Value) ([]byte, error) {
	if v.Ref == nil {
		return v.Inline, nil
	}
	p, err := c.Redeem(ctx, *v.Ref)
	if err != nil {
		return nil, err
	}
	return p.Bytes()
}

// DigestOf returns "sha256:<hex>" of data, the digest form refs use.
func DigestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
