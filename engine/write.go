package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/meta"
)

// The write pipeline: how a reader becomes a stored, verified object
// that a row owns. A put (put.go) runs every step in one call; a direct
// upload (upload.go) stages at init, writes when the store receives the
// body itself (on S3 the client PUTs to the bucket), and verifies and
// commits at confirm; a resumable upload (resumable.go) stages at start,
// appends through the storage, and at completion verifies the object as
// it arrived, or writes it again through step 2 into a restaged blob
// (meta.Restage), then commits. Each step keeps one invariant:
//
//  1. Stage (stage, then meta.CreatePending): the rows come first. One
//     transaction reserves the quota and inserts a staging blob with a
//     fresh object key and the pending claim that owns it, due at the
//     upload deadline. Every object is owned by a row before its first
//     byte exists, so a crash at any later point leaves rows the sweeper
//     finishes, never an object nobody owns.
//  2. Write (writeObject): the body streams through sha256 (and the
//     block table of an object stored plain) and a byte count, then the
//     compressor, the encryption framing and the object writer, holding
//     no more than a sample and a copy buffer. max_size and the declared
//     size and digest are checked before Close, which alone makes the
//     object visible: a failed check or a cancelled write leaves nothing
//     at the key.
//  3. Verify (hashStored): an object the pipeline did not write itself (a
//     client's PUT, an object the storage assembled from appends) is
//     read back, measured and hashed before it is committed.
//  4. Commit (commitWritten): the block table is recorded before the
//     commit that makes the object redeemable; then one transaction
//     turns the claim pending → active and the reservation into usage,
//     on the staging blob or, once dedup has checked the candidate's
//     object (commitShared, dedup.go), on a shared blob. Quota moves
//     exactly once: the commit and the finish of an abandoned claim are
//     both compare-and-swaps on pending, so only one of them turns the
//     reservation into usage or refunds it.
//  5. After the commit (committed): the counters, and the deletion of the
//     staging object a dedup hit made unneeded (the sweeper retries it
//     if that fails here).

// sampleSize is how much of a payload "auto" compression looks at.
const sampleSize = 64 << 10

// copyBufferSize is the chunk of the engine's other hashing copies
// (verifying a written object, a direct upload): large enough that a
// megabyte costs a handful of system calls, small enough that many
// concurrent ones stay cheap. A put streams through claimcheck.HashCopy.
const copyBufferSize = 256 << 10

// stageParams describes the write step 1 stages: a payload of
// opts.Size bytes for namespace ns.
type stageParams struct {
	ns        string
	pol       claimcheck.Policy
	opts      claimcheck.PutOptions // as checkPutOptions left them
	consumers int                   // from checkPutOptions
	now       time.Time
	// dueReason finishes the claim if nothing commits it by the upload
	// deadline: aborted for a put, never_confirmed for an upload.
	dueReason string
	// sk is the namespace's data key when the object is written
	// encrypted (its key then names the data key), nil otherwise.
	sk *sealKey
	// inline stages an inline object (inline.go): a put whose declared
	// size is within the namespace's inline_below. Uploads never do: the
	// client writes their bytes to the bucket.
	inline bool
}

// stage builds the rows of step 1: the pending claim and its staging
// blob, both due at the upload deadline (now + confirm_within, never
// past max_age), the claim reserving opts.Size bytes. Nothing is
// written; meta.CreatePending writes them in one transaction, the quota
// checked.
func (s *Store) stage(ctx context.Context, p stageParams) meta.CreatePendingParams {
	expires := p.now.Add(p.pol.TTL.MaxAge.D())
	deadline := minTime(p.now.Add(p.pol.Uploads.ConfirmWithin.D()), expires)
	span := trace.SpanFromContext(ctx)
	blobID := newBlobID(p.now)
	claim := meta.Claim{
		ID: newClaimID(p.now), Namespace: p.ns, BlobID: blobID, State: meta.ClaimPending,
		Size: p.opts.Size, ReservedBytes: p.opts.Size,
		ContentType: p.opts.ContentType, Labels: p.opts.Labels,
		CreatedAt: p.now, ExpiresAt: expires,
		DueAt: deadline, DueReason: p.dueReason,
		DeleteAfterRead:    p.pol.DeletesAfterRead(),
		RetentionAfterRead: p.pol.TTL.RetentionAfterRead.D(),
		GracePeriod:        p.pol.TTL.GracePeriod.D(),
		Consumers:          p.consumers, ConsumerNames: p.opts.ConsumerNames,
		TraceParent: s.traceParentOf(span),
	}
	s.traceLabels(span, p.ns, p.opts.Labels)
	staging := meta.Blob{
		ID: blobID, Namespace: p.ns, Key: objectKey(p.ns, blobID), State: meta.BlobStaging,
		CreatedAt: p.now, StateAt: p.now, CollectAt: deadline,
	}
	if p.inline {
		staging.Key = inlineObjectKey(p.ns, blobID)
	}
	if p.sk != nil {
		staging.Key = sealedKey(staging.Key, p.sk.ID())
	}
	return meta.CreatePendingParams{
		Claim: claim, Blob: staging, Now: p.now,
		QuotaBytes: int64(p.pol.Quota.Bytes), QuotaClaims: p.pol.Quota.Claims,
		Tenant: s.tenantQuota(p.pol),
	}
}

// written describes an object that was written completely.
type written struct {
	key         string // the object's key
	digest      string
	size        int64 // original bytes
	stored      int64 // object bytes
	compression string
	// blocks is the block table of a plain object of more than one
	// block (storedform.BlockTable, ADR 0257), nil otherwise; saveBlocks
	// records it before the commit.
	blocks []byte
}

// writeParams says what step 2 writes, and what it checks the body
// against.
type writeParams struct {
	key string // the staging blob's object key, owned since step 1
	// pol gives the compression and the max_size; a body longer than
	// max_size fails with ErrTooLarge.
	pol claimcheck.Policy
	// opts gives the declared size and digest (each zero when not
	// declared); a body that differs fails before the object is visible.
	opts claimcheck.PutOptions
	sk   *sealKey // encrypts the compressed stream; nil: stored plain
}

// openingObject is an object writer being opened in the background
// (openObject). Its context is the write's: cancelled before Close, the
// write is discarded.
type openingObject struct {
	cancel context.CancelFunc
	done   chan struct{}
	w      io.WriteCloser
	err    error
}

// openObject starts opening a writer for the object at key. A put
// opens it while step 1's transaction runs (ADR 0155); no byte is
// written before that transaction commits.
func (s *Store) openObject(ctx context.Context, key string) *openingObject {
	wctx, cancel := context.WithCancel(ctx)
	o := &openingObject{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.w, o.err = s.blobs.NewWriter(wctx, key)
	}()
	return o
}

// wait returns the opened writer.
func (o *openingObject) wait() (io.WriteCloser, error) {
	<-o.done
	return o.w, o.err
}

// discard abandons the object: nothing was written, nothing stays.
func (o *openingObject) discard() {
	o.cancel()
	if w, err := o.wait(); err == nil {
		_ = w.Close() // discards: its context is cancelled
	}
}

// writeObject is step 2: it streams body into the object at p.key and
// describes what was written. The object becomes visible only if every
// check passes: on any error the write's context is cancelled before
// Close, which discards it.
func (s *Store) writeObject(ctx context.Context, body io.Reader, p writeParams) (written, error) {
	return s.writeOpenedObject(ctx, s.openObject(ctx, p.key), body, p)
}

// writeOpenedObject is writeObject into the writer opening in o, which
// it closes or discards.
func (s *Store) writeOpenedObject(ctx context.Context, o *openingObject, body io.Reader, p writeParams) (written, error) {
	obj, err := o.wait()
	if err != nil {
		o.cancel()
		return written{}, fmt.Errorf("%w: write object: %v", claimcheck.ErrUnavailable, err)
	}
	committed := false
	defer func() {
		if !committed {
			o.cancel()
			_ = obj.Close() // discards the object: its context is cancelled
		}
	}()
	sample, body, err := autoSample(body, p.pol)
	if err != nil {
		return written{}, err
	}
	ow := &objectWrite{p: p, obj: obj, count: &countingWriter{w: obj},
		alg: compress.Choose(string(p.pol.Compression), sample)}
	if err := ow.open(); err != nil {
		return written{}, err
	}
	size, sum, err := ow.copy(ctx, ow.source(sample, body))
	if err != nil {
		return written{}, err
	}
	if err := ow.closeStream(sum); err != nil {
		return written{}, err
	}
	committed = true
	defer o.cancel() // after Close: the write's context ends with it
	if err := obj.Close(); err != nil {
		return written{}, fmt.Errorf("%w: write object: %v", claimcheck.ErrUnavailable, err)
	}
	return ow.written(size, sum), nil
}

// autoSample reads the sample "auto" compression chooses by, and
// returns it with the body that follows it. Only "auto" looks at the
// payload before choosing; any other setting streams from the first
// byte.
func autoSample(body io.Reader, pol claimcheck.Policy) ([]byte, io.Reader, error) {
	if string(pol.Compression) != compress.Auto {
		return nil, body, nil
	}
	sample := make([]byte, sampleSize)
	n, err := io.ReadFull(body, sample)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		body = bytes.NewReader(nil)
	case err != nil:
		return nil, nil, bodyErr(err)
	}
	return sample[:n], body, nil
}

// objectWrite is one run of step 2: the writers a body streams through
// on its way into one object, and what they learn of it.
type objectWrite struct {
	p     writeParams
	obj   io.WriteCloser  // the object writer
	count *countingWriter // over obj: the stored bytes
	enc   io.WriteCloser  // the encryption framing; nil when stored plain
	zw    io.WriteCloser  // the compressor, over enc or count
	// alg is the compression; zstd turns to none before its first byte
	// when the first frame does not shrink.
	alg string
	// announced: the object writer was told the payload's size and
	// sha256 before the first byte (blob.KnownPayloadWriter).
	announced bool
	h         hash.Hash              // the payload's sha256
	blocks    *storedform.BlockTable // of an object that may be stored plain
}

// open sets up the writers under the compressor: the byte count, the
// encryption framing, the compressor, and the hash (with the block
// table where the object may be stored as it is).
func (ow *objectWrite) open() error {
	var sink io.Writer = ow.count
	if ow.p.sk != nil {
		enc, err := ow.p.sk.Encrypt(ow.count, ow.p.key)
		if err != nil {
			return fmt.Errorf("%w: encrypt: %v", claimcheck.ErrUnavailable, err)
		}
		ow.enc, sink = enc, sealWriter{enc}
	}
	if ow.alg == compress.Zstd {
		// zstd where it saves bytes: a first frame that does not shrink
		// stores the payload as it is, and alg says so before the first
		// byte is written (ADR 0165).
		ow.zw = compress.NewZstdOrNone(sink, func(chosen string) {
			if ow.alg = chosen; ow.alg == compress.None {
				ow.announce()
			}
		})
	} else {
		zw, err := compress.NewWriter(ow.alg, sink)
		if err != nil {
			return err
		}
		ow.zw = zw
		if ow.alg == compress.None {
			ow.announce()
		}
	}
	ow.h = sha256.New()
	if ow.p.sk == nil && (ow.alg == compress.None || ow.alg == compress.Zstd) {
		// It may be stored as it is: its ranged reads check the blocks.
		ow.blocks = storedform.NewBlockTable()
		ow.h = blockHash{ow.h, ow.blocks}
	}
	return nil
}

// announce tells the object writer the size and sha256 of a payload
// stored as it arrives, when the caller declared both: S3 then receives
// the bytes while they arrive instead of after the last one, and checks
// them against the declared sha256 (ADR 0165). The body is still
// checked against both before Close, which alone completes the object.
func (ow *objectWrite) announce() {
	kw, ok := ow.obj.(blob.KnownPayloadWriter)
	opts := ow.p.opts
	if !ok || ow.p.sk != nil || opts.Size <= 0 || opts.Digest == "" {
		return
	}
	if sum, err := hex.DecodeString(strings.TrimPrefix(opts.Digest, "sha256:")); err == nil {
		ow.announced = kw.SetKnownPayload(opts.Size, sum)
	}
}

// source is the body as the copy reads it: the sample first, limited to
// one byte past max_size, and, when the object was announced, to the
// declared size.
func (ow *objectWrite) source(sample []byte, body io.Reader) io.Reader {
	limit := int64(ow.p.pol.MaxSize)
	src := io.LimitReader(io.MultiReader(bytes.NewReader(sample), body), limit+1)
	if !ow.announced {
		return src
	}
	// A body longer than declared fails as the caller's error, as
	// copy's checks do, not as the announced object's refusal of the
	// extra bytes.
	size := ow.p.opts.Size
	tooLong := invalidf("the body has more than the %d bytes declared", size)
	if size >= limit {
		tooLong = fmt.Errorf("%w: payload exceeds max_size %s (%d bytes)", claimcheck.ErrTooLarge, ow.p.pol.MaxSize, limit)
	}
	return &declaredSize{r: src, left: size, tooLong: &bodyTooLong{tooLong}}
}

// copy streams src into the compressor and checks what it read against
// max_size and the declared size and digest. It returns the payload's
// size and sha256; on failure it has closed the compressor, and what it
// wrote is discarded with the object.
func (ow *objectWrite) copy(ctx context.Context, src io.Reader) (int64, []byte, error) {
	// The sha256 runs in a second goroutine beside the compressor and
	// the object write (ADR 0155): a put costs about the longer of the
	// two, not their sum. Copy has joined that goroutine when it returns,
	// and h then covers exactly the size bytes the object was given.
	size, err := claimcheck.HashCopy(ow.zw, src, ow.h)
	if err != nil {
		_ = ow.zw.Close() // the write fails; what it wrote is discarded with the object
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		var we *writeError
		if errors.As(err, &we) {
			return 0, nil, fmt.Errorf("%w: write object: %v", claimcheck.ErrUnavailable, we.err)
		}
		return 0, nil, bodyErr(err)
	}
	sum := ow.h.Sum(nil)
	if err := ow.check(size, sum); err != nil {
		_ = ow.zw.Close() // the write fails; what it wrote is discarded with the object
		return 0, nil, err
	}
	return size, sum, nil
}

// check compares a body of size bytes hashing to sum with max_size and
// with the declared size and digest.
func (ow *objectWrite) check(size int64, sum []byte) error {
	pol, opts := ow.p.pol, ow.p.opts
	if limit := int64(pol.MaxSize); size > limit {
		return fmt.Errorf("%w: payload exceeds max_size %s (%d bytes)", claimcheck.ErrTooLarge, pol.MaxSize, limit)
	}
	if opts.Size > 0 && size != opts.Size {
		return invalidf("body has %d bytes, but %d were declared", size, opts.Size)
	}
	if digest := digestOf(sum); opts.Digest != "" && digest != opts.Digest {
		return fmt.Errorf("%w: body hashes to %s, declared %s", claimcheck.ErrChecksumMismatch, digest, opts.Digest)
	}
	return nil
}

// closeStream flushes the compressor and the encryption framing into
// the object writer, short of closing it. sum is the payload's sha256.
func (ow *objectWrite) closeStream(sum []byte) error {
	if err := ow.zw.Close(); err != nil {
		return fmt.Errorf("%w: compress: %v", claimcheck.ErrUnavailable, err)
	}
	if ow.enc != nil {
		// Writes the last segment, the one whose flag marks the end.
		if err := ow.enc.Close(); err != nil {
			return fmt.Errorf("%w: encrypt: %v", claimcheck.ErrUnavailable, err)
		}
	}
	if ph, ok := ow.obj.(blob.PayloadHasher); ok && ow.alg == compress.None && ow.p.sk == nil && !ow.announced {
		// Stored as written: the payload's sha256 is the object's, and
		// S3 over plain HTTP need not hash the bytes once more.
		ph.SetPayloadSHA256(sum)
	}
	return nil
}

// written describes the object once it is closed.
func (ow *objectWrite) written(size int64, sum []byte) written {
	w := written{key: ow.p.key, digest: digestOf(sum), size: size, stored: ow.count.n, compression: ow.alg}
	if ow.blocks != nil && ow.alg == compress.None {
		w.blocks = ow.blocks.Encoded()
	}
	return w
}

// digestOf spells a sha256 sum as claims carry it.
func digestOf(sum []byte) string { return "sha256:" + hex.EncodeToString(sum) }

// blockHash is the payload's sha256 that also feeds the block table of
// the object, for an object that may be stored plain.
type blockHash struct {
	hash.Hash
	t *storedform.BlockTable
}

func (b blockHash) Write(p []byte) (int, error) {
	_, _ = b.t.Write(p) // never fails
	return b.Hash.Write(p)
}

// bodyErr marks a failure to read the caller's body (a client that
// disconnected or sent fewer bytes than it announced).
func bodyErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The put's own claim was reaped while the body stalled
	// (pendingProgress): gone, as the commit would have answered.
	if _, ok := errors.AsType[*claimcheck.GoneError](err); ok {
		return err
	}
	if tl, ok := errors.AsType[*bodyTooLong](err); ok {
		return tl.err
	}
	return invalidf("reading the payload failed: %v", err)
}

// countingWriter counts bytes and tags write failures, so a failing object
// write is not mistaken for a failing body read.
type countingWriter struct {
	w io.Writer
	n int64
}

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

// declaredSize reads the declared size bytes of a body and fails if the
// body has more.
type declaredSize struct {
	r       io.Reader
	left    int64
	tooLong error
}

// bodyTooLong is declaredSize's error, passed on by bodyErr as it is.
type bodyTooLong struct{ err error }

func (e *bodyTooLong) Error() string { return e.err.Error() }
func (e *bodyTooLong) Unwrap() error { return e.err }

func (d *declaredSize) Read(p []byte) (int, error) {
	if d.left <= 0 {
		var one [1]byte
		for {
			n, err := d.r.Read(one[:])
			if n > 0 {
				return 0, d.tooLong
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= int64(n)
	return n, err
}

// hashStored is step 3 for the object of upload up, which a client or
// the storage wrote: its size and digest, and its block table
// (storedform.BlockTable, ADR 0257; nil for at most one block). It
// stops one byte past the declared size: that is enough to tell the
// object is too large, and a huge wrong upload is not read to its end.
func (s *Store) hashStored(ctx context.Context, up meta.Upload) (int64, string, []byte, error) {
	attrs, err := s.blobs.Attributes(ctx, up.Key)
	if errors.Is(err, blob.ErrNotFound) {
		return 0, "", nil, invalidf("nothing has been uploaded yet: PUT the payload to the upload URL, then confirm")
	}
	if err != nil {
		return 0, "", nil, fmt.Errorf("%w: stat uploaded object: %v", claimcheck.ErrUnavailable, err)
	}
	if attrs.Size != up.Size {
		return attrs.Size, "", nil, nil // the size tells already; not worth reading
	}
	r, err := s.blobs.NewReader(ctx, up.Key)
	if errors.Is(err, blob.ErrNotFound) {
		return 0, "", nil, invalidf("nothing has been uploaded yet: PUT the payload to the upload URL, then confirm")
	}
	if err != nil {
		return 0, "", nil, fmt.Errorf("%w: read uploaded object: %v", claimcheck.ErrUnavailable, err)
	}
	defer func() { _ = r.Close() }() // read only
	h, blocks := sha256.New(), storedform.NewBlockTable()
	n, err := io.CopyBuffer(io.MultiWriter(h, blocks), readerOnly{io.LimitReader(r, up.Size+1)}, make([]byte, copyBufferSize))
	if err != nil {
		return 0, "", nil, fmt.Errorf("%w: read uploaded object: %v", claimcheck.ErrUnavailable, err)
	}
	return n, digestOf(h.Sum(nil)), blocks.Encoded(), nil
}

// readerOnly hides WriterTo/ReaderFrom so io.CopyBuffer uses our buffer.
type readerOnly struct{ io.Reader }

// saveBlocks records the block table of the object w describes, if it
// has one, before the commit that makes it redeemable (ADR 0257): a
// plain object committed since block tables has its table.
func (s *Store) saveBlocks(ctx context.Context, w written) error {
	if w.blocks == nil {
		return nil
	}
	if err := s.meta.SaveBlockTable(ctx, w.key, w.blocks); err != nil {
		return fmt.Errorf("%w: %v", claimcheck.ErrUnavailable, err)
	}
	return nil
}

// commitParams says what step 4 commits: the object w describes, in
// the staging blob blobID, for the pending claim.
type commitParams struct {
	op     string // names the operation in errors
	ns     string
	claim  meta.Claim // pending; its ID, CreatedAt and ExpiresAt are read
	blobID string
	w      written
	pol    claimcheck.Policy
	sk     *sealKey // the data key the object was encrypted under, nil if plain
	// verified: the object was read whole and matched its size and
	// digest, so it may repair a damaged blob of the same content
	// (integrity.go) without being read back.
	verified bool
	// confirmed: an upload's commit (meta.CommitParams.Confirmed).
	confirmed bool
	// readBack reads the object back before it repairs a damaged blob,
	// when it was not verified (commitShared).
	readBack func(context.Context) error
}

// commitWritten is step 4: the block table, then the commit. A lost
// compare-and-swap (the claim is no longer pending: the reaper finished
// it, or a concurrent confirm committed it) is meta.ErrConflict as it
// is, counted here and answered by the caller; every other error is
// the public error of p.op.
func (s *Store) commitWritten(ctx context.Context, p commitParams) (meta.CommitResult, error) {
	if err := s.saveBlocks(ctx, p.w); err != nil {
		return meta.CommitResult{}, fmt.Errorf("%s: %w", p.op, err)
	}
	res, err := s.commitShared(ctx, meta.CommitParams{
		ClaimID: p.claim.ID, BlobID: p.blobID,
		Digest: p.w.digest, Size: p.w.size, StoredSize: p.w.stored, Compression: p.w.compression,
		Now: s.clock.Now(), DueAt: p.claim.ExpiresAt, DueReason: meta.ReasonExpired,
		Dedup: p.pol.DedupEnabled(), QuotaBytes: int64(p.pol.Quota.Bytes),
		Tenant: s.tenantQuota(p.pol),
		// Lifecycle safety net: never share an object the bucket may
		// expire before this claim's deadline (lifecyclebound.go).
		// Encrypted namespaces share only objects written under the
		// current data key (keyFloor, crypt.go).
		DedupNotBefore: keyFloor(s.dedupNotBefore(p.ns, latestExpiry(p.pol, p.claim.CreatedAt, p.claim.ExpiresAt)), p.sk),
		DiscardRetry:   s.discardRetry,
		RepairVerified: p.verified,
		Confirmed:      p.confirmed,
	}, p.readBack)
	switch {
	case errors.Is(err, meta.ErrConflict):
		s.metrics.casConflicts.Inc()
		return res, err
	case err != nil:
		return res, metaErr(p.op, err)
	}
	return res, nil
}

// committed is step 5, after a commit of w in namespace ns that began
// at start: the counters, and the deletion of the staging object a dedup
// hit made unneeded (collectDiscarded).
func (s *Store) committed(ctx context.Context, ns string, res meta.CommitResult, w written, start time.Time) {
	s.metrics.created.WithLabelValues(ns).Inc()
	s.metrics.bytesIn.WithLabelValues(ns).Add(float64(w.size))
	s.metrics.stored.WithLabelValues(ns).Add(float64(w.stored))
	s.observeDedup(ns, res, w.size)
	s.collectDiscarded(ctx, res)
	s.metrics.putDur.WithLabelValues(ns).Observe(s.clock.Now().Sub(start).Seconds())
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// refOf builds the reference of a committed claim from its rows.
func refOf(c meta.Claim, b meta.Blob) claimcheck.Ref {
	return claimcheck.Ref{
		ID: c.ID, Namespace: c.Namespace, Size: c.Size,
		StoredSize: b.StoredSize, Compression: b.Compression, Digest: b.Digest,
		CreatedAt: c.CreatedAt.UTC().Truncate(time.Second), ExpiresAt: c.ExpiresAt.UTC().Truncate(time.Second),
	}
}
