package allstores_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/allstores"
)

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
		// Opening a GCS bucket or an Azure container checks it at once;
		// these are refused before any request.
		{url: "gs://", err: "no bucket"},
		{url: "gs://b?bogus=1", err: `unknown parameter "bogus"`},
		{url: "azblob://", err: "no container"},
		{url: "azblob://c?bogus=1", err: `unknown parameter "bogus"`},
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
