package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"cloud.google.com/go/storage"

	"github.com/claimcheck/claimcheck/blob"
)

// maxObjectSize is the largest object GCS stores.
const maxObjectSize = 5 << 40

// appendSuffix names the object that holds one Append's bytes until
// they are composed onto the object at key. It lives only during an
// Append; one left by a crash is debris the backstop deletes.
const appendSuffix = ".append"

// BeginAppend implements blob.Appender. GCS objects are immutable, but
// compose makes one object out of others on the service: the bytes
// received so far are the object at key itself, empty at first, and
// each Append writes its bytes to a second object and composes the two
// back into key (ADR 0230). Append needs the object at key, so an
// aborted upload stays aborted. The handle is unused ("").
func (b *Bucket) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	if size < 0 || size > maxObjectSize {
		return "", fmt.Errorf("blob: begin append %s: size %d: want 0 to %d bytes", key, size, int64(maxObjectSize))
	}
	w := b.object(key).NewWriter(ctx)
	w.ContentType = "application/octet-stream"
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("blob: begin append %s: %w", key, err)
	}
	return "", nil
}

// Append implements blob.Appender. The object at key holds at least the
// off bytes recorded (more after a crash or a refused chunk: those are
// cut off first, by rewriting the first off bytes, the one case that
// copies what was stored). The new bytes stream to key+".append" in one
// request, without buffering, and are composed onto key only if key is
// still the generation that was checked: the recorded offset always
// points at a prefix of the object at key, which is all Append needs.
// A body that breaks keeps the bytes it brought.
func (b *Bucket) Append(ctx context.Context, key, _ string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	if off < 0 || off > size {
		return off, fmt.Errorf("blob: append %s: offset %d outside the object's %d bytes", key, off, size)
	}
	gen, err := b.keep(ctx, key, off)
	if err != nil {
		return off, err
	}
	read, rerr, err := b.writeFrom(ctx, b.object(key+appendSuffix), io.LimitReader(r, size-off))
	if err != nil {
		return off, fmt.Errorf("blob: append %s: %w", key, err)
	}
	if rerr == nil {
		var one [1]byte
		if m, _ := io.ReadFull(r, one[:]); m > 0 {
			rerr = fmt.Errorf("blob: append %s: more bytes than the %d left of the object", key, size-off)
		}
	}
	if read == 0 {
		return off, rerr
	}
	tmp := b.object(key + appendSuffix)
	c := b.object(key).If(storage.Conditions{GenerationMatch: gen}).ComposerFrom(b.object(key), tmp)
	c.ContentType = "application/octet-stream"
	if _, err := c.Run(ctx); err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) || httpStatus(err) == http.StatusPreconditionFailed {
			// Aborted, or replaced, meanwhile.
			err = errors.Join(blob.ErrNotFound, err)
		}
		return off, fmt.Errorf("blob: append %s: compose the %d new bytes onto the %d kept: %w", key, read, off, err)
	}
	if err := tmp.Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return off, fmt.Errorf("blob: append %s: delete the composed part: %w", key, err)
	}
	if err := durable(off + read); err != nil {
		return off, err
	}
	return off + read, rerr
}

// keep makes the object at key hold exactly its first off bytes and
// returns its generation. A missing object is an upload that was
// aborted: blob.ErrNotFound.
func (b *Bucket) keep(ctx context.Context, key string, off int64) (int64, error) {
	obj := b.object(key)
	a, err := obj.Attrs(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return 0, fmt.Errorf("blob: append %s: the %d bytes recorded are gone: %w", key, off, blob.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("blob: append %s: %w", key, err)
	}
	switch {
	case a.Size == off:
		return a.Generation, nil
	case a.Size < off:
		return 0, fmt.Errorf("blob: append %s: %d bytes kept, %d recorded", key, a.Size, off)
	}
	// Bytes past the recorded offset (a refused chunk, a crash before
	// it was recorded): rewrite the first off bytes as the object.
	if off == 0 {
		w := obj.If(storage.Conditions{GenerationMatch: a.Generation}).NewWriter(ctx)
		w.ContentType = "application/octet-stream"
		if err := w.Close(); err != nil {
			return 0, fmt.Errorf("blob: append %s: cut the object back to nothing: %w", key, err)
		}
		return w.Attrs().Generation, nil
	}
	rd, err := obj.Generation(a.Generation).NewRangeReader(ctx, 0, off)
	if err != nil {
		return 0, fmt.Errorf("blob: append %s: read the %d bytes recorded: %w", key, off, err)
	}
	defer func() { _ = rd.Close() }()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.If(storage.Conditions{GenerationMatch: a.Generation}).NewWriter(wctx)
	w.ChunkSize = 0
	w.ContentType = "application/octet-stream"
	if n, err := io.Copy(w, rd); err != nil || n != off {
		cancel()
		_ = w.Close()
		return 0, fmt.Errorf("blob: append %s: cut the object back to the %d bytes recorded: copied %d: %v", key, off, n, err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("blob: append %s: cut the object back to the %d bytes recorded: %w", key, off, err)
	}
	return w.Attrs().Generation, nil
}

// writeFrom streams r into obj with one request (no buffering) and
// returns the bytes written, the error of r (other than io.EOF) and the
// error of the write. A body that fails after some bytes still stores
// them; one that brought none stores nothing.
func (b *Bucket) writeFrom(ctx context.Context, obj *storage.ObjectHandle, r io.Reader) (int64, error, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.NewWriter(wctx)
	w.ChunkSize = 0
	w.ContentType = "application/octet-stream"
	var (
		read int64
		rerr error
		buf  = make([]byte, 256<<10)
	)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				cancel()
				_ = w.Close()
				return 0, nil, werr
			}
			read += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	if read == 0 {
		cancel()
		_ = w.Close()
		return 0, rerr, nil
	}
	if err := w.Close(); err != nil {
		return 0, rerr, err
	}
	return read, rerr, nil
}

// CompleteAppend implements blob.Appender: the object at key is the
// object, once cut to size (bytes of a refused last chunk). A retry
// finds it complete and succeeds.
func (b *Bucket) CompleteAppend(ctx context.Context, key, _ string, size int64) error {
	if size == 0 {
		w := b.object(key).NewWriter(ctx)
		w.ContentType = "application/octet-stream"
		if err := w.Close(); err != nil {
			return fmt.Errorf("blob: complete append %s: %w", key, err)
		}
		return nil
	}
	if _, err := b.keep(ctx, key, size); err != nil {
		return fmt.Errorf("blob: complete append %s: %w", key, err)
	}
	return nil
}

// AbortAppend implements blob.Appender: the object at key and the part
// of an Append in flight are deleted.
func (b *Bucket) AbortAppend(ctx context.Context, key, _ string) error {
	for _, k := range []string{key + appendSuffix, key} {
		if err := b.object(k).Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
			return fmt.Errorf("blob: abort append %s: %w", key, err)
		}
	}
	return nil
}
