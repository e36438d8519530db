package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// appendCopyBuffer is the buffer of one Append's copy to its file.
const appendCopyBuffer = 256 << 10

// stagingPath is where the object at key is built: its own final path.
// The file driver maps a key made of letters, digits, "-", "_", "." and
// single slashes to exactly that path under the root (it escapes other
// keys, which are refused here rather than guessed at), so once the last
// byte is appended the object is there, readable by NewReader, with no
// copy or rename; and deleting key removes the staging file too.
func (b *Bucket) stagingPath(key string) (string, error) {
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasSuffix(seg, ".attrs") {
			return "", fmt.Errorf("blob: append %s: key must be slash-separated names, none empty, \".\" or \"..\"", key)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return "", fmt.Errorf("blob: append %s: key has characters other than letters, digits, \"-\", \"_\" and \".\"", key)
			}
		}
	}
	return filepath.Join(b.dir, filepath.FromSlash(key)), nil
}

// BeginAppend implements blob.Appender: an empty staging file at the object's
// path. The handle is empty: the path says everything.
func (b *Bucket) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	p, err := b.stagingPath(key)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return "", fmt.Errorf("blob: begin append %s: %w", key, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return "", fmt.Errorf("blob: begin append %s: %w", key, err)
	}
	return "", f.Close()
}

// Append implements blob.Appender. The file is cut back to off first (bytes
// past it were never recorded), the body is written at off, and the
// file is synced before durable is told, so a recorded offset survives
// a crash of the machine. A refused chunk's bytes stay past the
// recorded offset until the next Append cuts them.
func (b *Bucket) Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	p, err := b.stagingPath(key)
	if err != nil {
		return off, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return off, fmt.Errorf("blob: append %s: %w", key, blob.ErrNotFound)
	}
	if err != nil {
		return off, fmt.Errorf("blob: append %s: %w", key, err)
	}
	// The bytes that count are synced before durable is told; a failed
	// Close after that loses nothing.
	defer func() { _ = f.Close() }()
	if err := f.Truncate(off); err != nil {
		return off, fmt.Errorf("blob: append %s: %w", key, err)
	}
	n, rerr := copyAppend(ctx, io.NewOffsetWriter(f, off), r, size-off)
	if n == 0 {
		return off, rerr
	}
	if err := f.Sync(); err != nil {
		return off, fmt.Errorf("blob: append %s: %w", key, err)
	}
	if err := durable(off + n); err != nil {
		return off, err
	}
	return off + n, rerr
}

// copyAppend copies r to w, at most limit bytes, and fails (after
// copying limit) if r has more. Write errors are the store's; read
// errors pass through unwrapped. It stops early when ctx is done.
func copyAppend(ctx context.Context, w io.Writer, r io.Reader, limit int64) (int64, error) {
	buf := make([]byte, appendCopyBuffer)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		want := int64(len(buf))
		if left := limit - n; left < want {
			want = left
		}
		if want == 0 {
			// Full: one more byte would be past the object's size.
			var one [1]byte
			if m, _ := io.ReadFull(r, one[:]); m > 0 {
				return n, fmt.Errorf("blob: append: more bytes than the %d left of the object", limit)
			}
			return n, nil
		}
		m, err := r.Read(buf[:want])
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return n, fmt.Errorf("blob: append: %w", werr)
			}
			n += int64(m)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// CompleteAppend implements blob.Appender: the staging file is the object
// already; it is cut to size in case a refused chunk left bytes past it.
func (b *Bucket) CompleteAppend(ctx context.Context, key, handle string, size int64) error {
	p, err := b.stagingPath(key)
	if err != nil {
		return err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: complete append %s: %w", key, blob.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("blob: complete append %s: %w", key, err)
	}
	switch {
	case fi.Size() < size:
		return fmt.Errorf("blob: complete append %s: the file has %d bytes, not %d", key, fi.Size(), size)
	case fi.Size() > size:
		if err := os.Truncate(p, size); err != nil {
			return fmt.Errorf("blob: complete append %s: %w", key, err)
		}
	}
	return nil
}

// AbortAppend implements blob.Appender: the staging file is removed.
func (b *Bucket) AbortAppend(ctx context.Context, key, handle string) error {
	if _, err := b.stagingPath(key); err != nil {
		return err
	}
	return b.Delete(ctx, key)
}

// Attributes implements blob.Store with one stat of the object's file where
// the key maps to a path as is (see stagingPath; a segment ending in "."
// is left to the driver too, which escapes the slash after ".."). The
// file driver's own Attributes stats the same file and then tries to
// open its ".attrs" sidecar, which this bucket never writes
// (MetadataDontWrite), and traces a span around both: a digest-first
// hit calls this inside its SQLite write transaction (engine/dedup.go),
// so the failed open and the span were paid with the database's one
// writer lock held. Size and ModTime are the stat's, as the driver's
// are; a directory is no object, as for the driver.
func (b *Bucket) Attributes(ctx context.Context, key string) (blob.Attributes, error) {
	p, err := b.stagingPath(key)
	if err != nil || strings.HasSuffix(key, ".") || strings.Contains(key, "./") {
		return b.Bucket.Attributes(ctx, key)
	}
	info, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && info.IsDir() {
		err = blob.ErrNotFound
	}
	if err != nil {
		return blob.Attributes{}, gocloudbucket.Wrap("attributes", key, err)
	}
	return blob.Attributes{Size: info.Size(), ModTime: info.ModTime()}, nil
}
