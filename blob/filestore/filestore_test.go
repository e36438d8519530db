package filestore_test

import (
	"context"
	"errors"
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
