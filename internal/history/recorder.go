package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// Recorder is the Go client with every call written to a history: an
// invocation line before it, a completion line after. It is safe for
// concurrent use; the lines of one call may interleave with others'.
// Recorders made by With share one history (several servers' clients).
type Recorder struct {
	C   *client.Client
	log *log
}

// log is the history several recorders write to, and what they learnt
// of the namespaces.
type log struct {
	mu      sync.Mutex
	w       io.Writer
	seq     int64
	err     error                    // the first write that failed
	windows map[string]time.Duration // namespace → read window
}

// NewRecorder records the calls of c to w (c may be nil when only the
// recorders With makes are called).
func NewRecorder(c *client.Client, w io.Writer) *Recorder {
	return &Recorder{C: c, log: &log{w: w, windows: map[string]time.Duration{}}}
}

// With is a recorder of c's calls to r's history.
func (r *Recorder) With(c *client.Client) *Recorder { return &Recorder{C: c, log: r.log} }

// Err is the first failure to write the history.
func (r *Recorder) Err() error {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.err
}

func (r *Recorder) write(e Event) int64 {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq, e.Time = l.seq, time.Now()
	b, err := json.Marshal(e)
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	if err != nil && l.err == nil {
		l.err = err
	}
	return e.Seq
}

// complete writes the completion of the call invoked as of.
func (r *Recorder) complete(of int64, e Event, err error) {
	e.Of, e.Phase = of, PhaseOK
	if err != nil {
		e.Phase, e.Error = PhaseFail, errorClass(err)
	}
	r.write(e)
}

// errorClass names err the way the checker reads it.
func errorClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{claimcheck.ErrExpired, "expired"}, {claimcheck.ErrGone, "gone"}, {claimcheck.ErrNotFound, "not_found"},
		{claimcheck.ErrUnavailable, "unavailable"}, {claimcheck.ErrHeld, "held"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return err.Error()
}

// readWindow is ns's delete-after-read window (0: none), asked once.
func (r *Recorder) readWindow(ctx context.Context, ns string) time.Duration {
	r.log.mu.Lock()
	w, ok := r.log.windows[ns]
	r.log.mu.Unlock()
	if ok {
		return w
	}
	p, err := r.C.Policy(ctx, ns)
	if err != nil {
		return 0 // not cached: asked again by the next put
	}
	if d := p.TTL.DeleteAfterRead; d != nil && *d {
		w = time.Duration(p.TTL.RetentionAfterRead)
	}
	r.log.mu.Lock()
	r.log.windows[ns] = w
	r.log.mu.Unlock()
	return w
}

// Put puts data into ns and records the claim it was acknowledged as.
func (r *Recorder) Put(ctx context.Context, ns string, data []byte, opts claimcheck.PutOptions) (claimcheck.Ref, error) {
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	window := r.readWindow(ctx, ns)
	of := r.write(Event{Op: OpPut, Phase: PhaseInvoke, NS: ns, Digest: digest, Size: int64(len(data))})
	ref, err := r.C.Put(ctx, ns, bytes.NewReader(data), opts)
	r.complete(of, Event{Op: OpPut, NS: ns, ID: ref.ID, Digest: digest, Size: int64(len(data)), ExpiresAt: ref.ExpiresAt, ReadWindow: window}, err)
	return ref, err
}

// Redeem reads the claim whole and records the digest of what came back.
func (r *Recorder) Redeem(ctx context.Context, ref claimcheck.Ref) ([]byte, error) {
	of := r.write(Event{Op: OpRedeem, Phase: PhaseInvoke, NS: ref.Namespace, ID: ref.ID})
	data, err := r.redeem(ctx, ref)
	e := Event{Op: OpRedeem, NS: ref.Namespace, ID: ref.ID}
	if err == nil {
		sum := sha256.Sum256(data)
		e.Digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	r.complete(of, e, err)
	return data, err
}

func (r *Recorder) redeem(ctx context.Context, ref claimcheck.Ref) ([]byte, error) {
	p, err := r.C.Redeem(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.Close() }() // read whole: its verification is ReadAll's error
	return io.ReadAll(p)
}

// Release records a consumer's release.
func (r *Recorder) Release(ctx context.Context, ref claimcheck.Ref, consumer string) error {
	of := r.write(Event{Op: OpRelease, Phase: PhaseInvoke, NS: ref.Namespace, ID: ref.ID})
	err := r.C.Release(ctx, ref, consumer)
	r.complete(of, Event{Op: OpRelease, NS: ref.Namespace, ID: ref.ID}, err)
	return err
}

// Extend records an extension and the deadline it set.
func (r *Recorder) Extend(ctx context.Context, ref claimcheck.Ref, opts claimcheck.ExtendOptions) (claimcheck.ClaimInfo, error) {
	of := r.write(Event{Op: OpExtend, Phase: PhaseInvoke, NS: ref.Namespace, ID: ref.ID})
	info, err := r.C.Extend(ctx, ref, opts)
	r.complete(of, Event{Op: OpExtend, NS: ref.Namespace, ID: ref.ID, ExpiresAt: info.DeleteAt}, err)
	return info, err
}

// Delete records a delete.
func (r *Recorder) Delete(ctx context.Context, ref claimcheck.Ref) error {
	of := r.write(Event{Op: OpDelete, Phase: PhaseInvoke, NS: ref.Namespace, ID: ref.ID})
	err := r.C.Delete(ctx, ref)
	r.complete(of, Event{Op: OpDelete, NS: ref.Namespace, ID: ref.ID}, err)
	return err
}

// Hold records a legal hold set on the claim.
func (r *Recorder) Hold(ctx context.Context, ref claimcheck.Ref, reason string) error {
	of := r.write(Event{Op: OpHold, Phase: PhaseInvoke, NS: ref.Namespace, ID: ref.ID})
	err := r.C.SetHold(ctx, ref, reason)
	r.complete(of, Event{Op: OpHold, NS: ref.Namespace, ID: ref.ID}, err)
	return err
}

// Usage records the namespace's usage as the server reports it.
func (r *Recorder) Usage(ctx context.Context, ns string) (claimcheck.NamespaceUsage, error) {
	of := r.write(Event{Op: OpUsage, Phase: PhaseInvoke, NS: ns})
	info, err := r.C.Namespace(ctx, ns)
	r.complete(of, Event{Op: OpUsage, NS: ns, ActiveClaims: info.Usage.ActiveClaims, UsedBytes: info.Usage.UsedBytes}, err)
	return info.Usage, err
}

// Inventory records what the store holds, as the caller read it (from
// `claimcheck fsck --json` once the load has stopped).
func (r *Recorder) Inventory(inv Inventory) {
	of := r.write(Event{Op: OpInventory, Phase: PhaseInvoke})
	r.complete(of, Event{Op: OpInventory, Inventory: &inv}, nil)
}
