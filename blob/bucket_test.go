package blob_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/internal/testsvc"
)

func openURL(t *testing.T, url string) blob.Store {
	t.Helper()
	s, err := blob.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	return s
}

func TestFile(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return openURL(t, "file://"+t.TempDir())
	})
}

// TestFileAttributes checks the file bucket's own Attributes (one stat)
// against the file driver's, which it replaces for plain keys: same
// size and modification time for every object, not found for a missing
// key and for a directory, and the driver's answer for keys it escapes.
func TestFileAttributes(t *testing.T) {
	s := openURL(t, "file://"+t.TempDir())
	fb, ok := s.(*blob.FileBucket)
	if !ok {
		t.Fatalf("file:// opened a %T, want *blob.FileBucket", s)
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

func TestMem(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return openURL(t, "mem://")
	})
}

func TestS3(t *testing.T) {
	u := testsvc.S3URL(t)
	blobtest.Run(t, func(t *testing.T) blob.Store { return openURL(t, u) })
}

func TestS3DeleteMany(t *testing.T) {
	s := openURL(t, testsvc.S3URL(t))
	defer s.Close()
	bd, ok := s.(blob.BatchDeleter)
	if !ok {
		t.Fatalf("%T is not a BatchDeleter", s)
	}
	if bd.MaxBatch() != 1000 {
		t.Errorf("MaxBatch = %d, want 1000", bd.MaxBatch())
	}
	ctx := t.Context()
	prefix := fmt.Sprintf("deletemany/%d/", os.Getpid())
	var keys []string
	for i := range 5 {
		k := fmt.Sprintf("%s%d", prefix, i)
		put(t, s, k, "x")
		keys = append(keys, k)
	}
	failed, err := bd.DeleteMany(ctx, append(keys, prefix+"never-written"))
	if err != nil || len(failed) != 0 {
		t.Fatalf("DeleteMany = %v, %v; want no failures", failed, err)
	}
	if objs, _, err := s.List(ctx, prefix, "", 100); err != nil || len(objs) != 0 {
		t.Errorf("List after DeleteMany = %v, %v; want nothing", objs, err)
	}
	if _, err := bd.DeleteMany(ctx, make([]string, 1001)); err == nil {
		t.Error("DeleteMany of 1001 keys = nil error, want a refusal")
	}
}

func TestCounting(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, _ := blob.NewCounting(openURL(t, "mem://"))
		return s
	})
}

// TestMetrics runs the suite through WithMetrics over both local
// backends: the wrapper must change nothing a caller can see.
func TestMetrics(t *testing.T) {
	for _, url := range []string{"mem://", "file://"} {
		t.Run(url, func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Store {
				u := url
				if u == "file://" {
					u += t.TempDir()
				}
				return blob.WithMetrics(openURL(t, u), prometheus.NewRegistry())
			})
		})
	}
}

func put(t *testing.T, s blob.Store, key, data string) {
	t.Helper()
	w, err := s.NewWriter(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		url   string
		batch bool   // implements BatchDeleter
		err   string // substring of the error; "" for success
	}{
		{url: "mem://"},
		{url: "file://" + filepath.Join(dir, "new", "dir")},
		{url: "file://localhost" + filepath.Join(dir, "other")},
		{url: "file://" + dir + "?dir_file_mode=0750"},
		{url: "file://data/blobs", err: `host "data"`},
		{url: "file:data/blobs", err: "file:///absolute/dir"},
		{url: "file://", err: "no directory"},
		{url: "file:///", err: "no directory"},
		{url: "file://./", err: "no directory"},
		{url: "file://" + dir + "?bogus=1", err: "bogus"},
		{url: "ftp://example.com/x", err: `unsupported scheme "ftp"`},
		{url: "/plain/path", err: `unsupported scheme ""`},
		// Opening an S3 bucket makes no request, so this needs no server.
		{url: "s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true", batch: true},
	} {
		t.Run(tc.url, func(t *testing.T) {
			s, err := blob.Open(t.Context(), tc.url)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Open = %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if _, ok := s.(blob.BatchDeleter); ok != tc.batch {
				t.Errorf("%T implements BatchDeleter: %v, want %v", s, ok, tc.batch)
			}
		})
	}
}

func TestFileRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := openURL(t, "file://./data/blobs")
	defer s.Close()
	put(t, s, "ns/obj", "hello")
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
	s := openURL(t, "file://"+dir)
	defer s.Close()

	put(t, s, "ns/kept", "committed")
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

func TestErrors(t *testing.T) {
	s := openURL(t, "mem://")
	defer s.Close()
	_, err := s.NewReader(t.Context(), "ns/missing")
	if !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("NewReader = %v, want ErrNotFound", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "read") || !strings.Contains(msg, "ns/missing") {
		t.Errorf("error %q does not name the operation and the key", msg)
	}
}
