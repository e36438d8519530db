package filestore_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/blob/filestore"
)

func TestFile(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return blobtest.Open(t, "file://"+t.TempDir())
	})
}

// TestFileAttributes checks the file bucket's own Attributes (one stat)
// against the file driver's, which it replaces for plain keys: same
// size and modification time for every object, not found for a missing
// key and for a directory, and the driver's answer for keys it escapes.
func TestFileAttributes(t *testing.T) {
	s := blobtest.Open(t, "file://"+t.TempDir())
	fb, ok := s.(*filestore.Bucket)
	if !ok {
		t.Fatalf("file:// opened a %T, want *filestore.Bucket", s)
	}
	put := func(key, body string) {
		t.Helper()
		w, err := s.NewWriter(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	written := map[string]string{
		"plain":          "one",
		"ns/b_x-Y.z":     "two bytes more",
		"dir/nested/obj": "",
		"dots../after":   "escaped by the driver",
		"sp ace/obj":     "escaped too",
	}
	for k, v := range written {
		put(k, v)
	}
	for k, v := range written {
		got, err := fb.Attributes(t.Context(), k)
		if err != nil {
			t.Fatalf("Attributes(%q): %v", k, err)
		}
		want, err := fb.Bucket.Attributes(t.Context(), k)
		if err != nil {
			t.Fatalf("driver's Attributes(%q): %v", k, err)
		}
		if got.Size != int64(len(v)) || got.Size != want.Size || !got.ModTime.Equal(want.ModTime) {
			t.Errorf("Attributes(%q) = %+v, driver's %+v, want size %d", k, got, want, len(v))
		}
	}
	for _, k := range []string{"missing", "dir", "dir/nested", "ns/missing"} {
		if _, err := fb.Attributes(t.Context(), k); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Attributes(%q) = %v, want ErrNotFound", k, err)
		}
	}
}

func TestFileRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := blobtest.Open(t, "file://./data/blobs")
	defer s.Close()
	blobtest.Put(t, s, "ns/obj", "hello")
	if _, err := os.Stat(filepath.Join(dir, "data", "blobs", "ns", "obj")); err != nil {
		t.Errorf("object not under the working directory: %v", err)
	}
}

// TestFileNoDebris checks where the file backend's temp files live: inside
// the bucket directory (never os.TempDir), and gone after both a committed
// and a cancelled write.
func TestFileNoDebris(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	s := blobtest.Open(t, "file://"+dir)
	defer s.Close()

	blobtest.Put(t, s, "ns/kept", "committed")
	ctx, cancel := context.WithCancel(t.Context())
	w, err := s.NewWriter(ctx, "ns/abandoned")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("half a payload")); err != nil {
		t.Fatal(err)
	}
	if files := walk(t, dir); len(files) != 2 {
		t.Errorf("during a write the bucket holds %q, want the object and one temp file", files)
	}
	cancel()
	if err := w.Close(); err == nil {
		t.Error("Close after cancel = nil, want an error")
	}

	if files := walk(t, dir); !slices.Equal(files, []string{"ns/kept"}) {
		t.Errorf("bucket holds %q, want only ns/kept", files)
	}
	if files := walk(t, tmp); len(files) != 0 {
		t.Errorf("TMPDIR holds %q, want nothing", files)
	}
}

// walk returns the regular files under dir, slash-separated and relative.
func walk(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestFileDirect checks the bucket's own reads and writes of plain keys
// (direct.go) against the file driver's: what one writes the other reads
// whole and by range, a directory or a missing key is not found, and
// keys the driver escapes still round-trip.
func TestFileDirect(t *testing.T) {
	s := blobtest.Open(t, "file://"+t.TempDir())
	fb := s.(*filestore.Bucket)
	read := func(open func(ctx context.Context, key string, off, n int64) (io.ReadCloser, error), key string, off, n int64) (string, error) {
		t.Helper()
		r, err := open(t.Context(), key, off, n)
		if err != nil {
			return "", err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		return string(b), err
	}
	for _, key := range []string{"plain", "ns/b_x-Y.z", "new/dir/obj", "dots../after", "sp ace/obj", "end."} {
		blobtest.Put(t, fb, key, "written here: "+key)
		blobtest.Put(t, fb.Bucket, key+"-driver", "written by the driver: "+key)
		for _, c := range []struct{ key, body string }{{key, "written here: " + key}, {key + "-driver", "written by the driver: " + key}} {
			for _, rng := range [][2]int64{{0, -1}, {3, 5}, {int64(len(c.body)) - 2, -1}, {int64(len(c.body)) + 5, -1}, {0, 0}} {
				got, err := read(fb.NewRangeReader, c.key, rng[0], rng[1])
				want, werr := read(fb.Bucket.NewRangeReader, c.key, rng[0], rng[1])
				if err != nil || werr != nil || got != want {
					t.Errorf("range %v of %q: %q, %v; the driver reads %q, %v", rng, c.key, got, err, want, werr)
				}
			}
		}
	}
	for _, key := range []string{"missing", "ns", "new/dir", "ns/missing"} {
		if _, err := fb.NewReader(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("NewReader(%q) = %v, want ErrNotFound", key, err)
		}
	}
	if _, err := fb.NewRangeReader(t.Context(), "plain", -1, 2); err == nil {
		t.Error("a negative offset was accepted")
	}
}
