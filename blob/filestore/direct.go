package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// Reads and writes of plain keys go to the object's file directly, the
// way the file driver would, without its bookkeeping around them: per
// read the driver stats the file, tries to open its ".attrs" sidecar
// (which this bucket never writes) and then opens the file; per write it
// stats the directory (MkdirAll), and after renaming the temp file into
// place it removes the temp name again, which no longer exists; around
// both it runs a span and a derived context. On a small payload those
// system calls are a good part of what the server spends on a put and a
// redeem. The files are the driver's exactly: the same path for the key
// (plainPath), the same temp file next to it ("<path>.<hex nanoseconds>.tmp",
// created exclusively, mode 0666 before umask), renamed into place on a
// successful Close and removed when the write's context is done, so a
// store written one way reads the other, and the backstop, fsck and the
// sweeper find what they always found. Keys the driver escapes, and
// buckets that asked for sidecar files, go through the driver.

// plainPath is the object's path when the file driver maps key to it as
// is (see stagingPath); a segment ending in "." is left to the driver,
// which escapes the slash after "..".
func (b *Bucket) plainPath(key string) (string, bool) {
	p, err := b.stagingPath(key)
	if err != nil || strings.HasSuffix(key, ".") || strings.Contains(key, "./") {
		return "", false
	}
	return p, true
}

// NewReader implements blob.Store.
func (b *Bucket) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	return b.NewRangeReader(ctx, key, 0, -1)
}

// NewRangeReader implements blob.Store: one open and one fstat (a
// directory is no object, as for the driver) for a plain key.
func (b *Bucket) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, ok := b.plainPath(key)
	if !ok || offset < 0 {
		// The driver's own answer, its refusal of a negative offset too.
		return b.Bucket.NewRangeReader(ctx, key, offset, length)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, readErr(key, err)
	}
	info, err := f.Stat()
	if err == nil && info.IsDir() {
		err = fs.ErrNotExist
	}
	if err == nil && offset > 0 {
		_, err = f.Seek(offset, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, readErr(key, err)
	}
	// An object's file does not change once renamed into place: reading
	// up to the size the stat saw ends the stream without one more read
	// that only finds the end.
	n := max(info.Size()-offset, 0)
	if length >= 0 {
		n = min(n, length)
	}
	return &fileReader{f: f, r: io.LimitReader(f, n), key: key}, nil
}

// readErr is the read's error as the driver's path reports it: a missing
// file is blob.ErrNotFound.
func readErr(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: read %s: %w", key, blob.ErrNotFound)
	}
	return gocloudbucket.Wrap("read", key, err)
}

type fileReader struct {
	f   *os.File
	r   io.Reader
	key string
}

func (r *fileReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err == nil || err == io.EOF {
		// io.EOF must reach the caller unwrapped (io.Copy, io.ReadAll).
		return n, err
	}
	return n, readErr(r.key, err)
}

func (r *fileReader) Close() error {
	return readErr(r.key, r.f.Close()) // nil stays nil
}

// NewWriter implements blob.Store: the temp file is created directly for
// a plain key in a directory that exists; a missing directory, a key the
// driver escapes or a bucket with sidecars go through the driver, which
// creates directories with the bucket's dir_file_mode.
func (b *Bucket) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	p, ok := b.plainPath(key)
	if !ok || b.sidecars {
		return b.Bucket.NewWriter(ctx, key)
	}
	f, err := createTemp(p)
	if errors.Is(err, fs.ErrNotExist) {
		return b.Bucket.NewWriter(ctx, key)
	}
	if err != nil {
		return nil, gocloudbucket.Wrap("write", key, err)
	}
	return &fileWriter{ctx: ctx, f: f, path: p, key: key}, nil
}

// createTemp creates the temp file of the object at path exclusively,
// named as the file driver names it.
func createTemp(path string) (*os.File, error) {
	for try := 0; ; try++ {
		name := path + "." + strconv.FormatInt(time.Now().UnixNano(), 16) + ".tmp"
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

type fileWriter struct {
	ctx  context.Context
	f    *os.File
	path string
	key  string
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, gocloudbucket.Wrap("write", w.key, err)
	}
	return n, nil
}

// Close makes the object visible at its key by renaming the temp file
// into place, unless the write's context is done: then, as after any
// failure, the temp file is removed and nothing is visible.
func (w *fileWriter) Close() error {
	tmp := w.f.Name()
	err := w.f.Close()
	if err == nil {
		err = w.ctx.Err()
	}
	if err == nil {
		err = os.Rename(tmp, w.path)
	}
	if err != nil {
		_ = os.Remove(tmp) // the error to report is the write's
		return gocloudbucket.Wrap("write", w.key, err)
	}
	return nil
}
