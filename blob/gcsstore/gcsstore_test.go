package gcsstore_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	_ "github.com/claimcheck/claimcheck/blob/gcsstore"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// emulatorUnchecked: fake-gcs-server checks neither signatures nor the
// signed x-goog-content-length-range header.
const emulatorUnchecked = "fake-gcs-server does not check x-goog-content-length-range (Google Cloud Storage does); ConfirmUpload hashes the object and refuses it"

// sumUnchecked: GCS itself checks MD5 and CRC32C, never a sha256.
const sumUnchecked = "GCS cannot check a body against a sha256 (it checks MD5 and CRC32C, which clients do not send); ConfirmUpload hashes the object and refuses it (ADR 0230)"

func TestGCS(t *testing.T) {
	u := testsvc.GCSURL(t)
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) },
		blobtest.Options{PresignLengthUnchecked: emulatorUnchecked, PresignSumUnchecked: sumUnchecked})
}

func TestGCSPrefix(t *testing.T) {
	u := testsvc.GCSURL(t) + "&prefix=under/a/prefix/"
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) },
		blobtest.Options{PresignLengthUnchecked: emulatorUnchecked, PresignSumUnchecked: sumUnchecked})
}

// TestGCSSignedURLCreatesOnly checks what the V4 URL binds: the length
// and "create only" are signed headers, which GCS enforces. fake-gcs-server
// checks neither signatures nor those headers, so the test reads the
// URL's signed headers instead of sending a second PUT.
func TestGCSSignedURLCreatesOnly(t *testing.T) {
	s := blobtest.Open(t, testsvc.GCSURL(t))
	defer s.Close()
	pp, err := blob.AbilitiesOf(s).Presigner.PresignPut(t.Context(), "signed/x", 12345, strings.Repeat("0", 64), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pp.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("X-Goog-Algorithm") != "GOOG4-RSA-SHA256" {
		t.Errorf("X-Goog-Algorithm = %q, want a V4 signature", q.Get("X-Goog-Algorithm"))
	}
	signed := strings.Split(q.Get("X-Goog-SignedHeaders"), ";")
	for h, want := range map[string]string{"content-type": "application/octet-stream", "x-goog-content-length-range": "12345,12345", "x-goog-if-generation-match": "0"} {
		if !slices.Contains(signed, h) {
			t.Errorf("signed headers %q lack %s", signed, h)
		}
		if got := pp.Headers[http.CanonicalHeaderKey(h)]; got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	// Whole seconds from the signing instant: 59 or 60 for a minute.
	if exp, _ := strconv.Atoi(q.Get("X-Goog-Expires")); exp < 59 || exp > 60 {
		t.Errorf("X-Goog-Expires = %d, want the ttl, 60", exp)
	}
}

// TestGCSOpenErrors: what is wrong is said at open, with what to do.
// fake-gcs-server checks no credentials, so wrong credentials and a
// missing permission are not tried here (checkAccess asks GCS's
// testIamPermissions, which the emulator does not have).
func TestGCSOpenErrors(t *testing.T) {
	u, err := url.Parse(testsvc.GCSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "no-such-bucket"
	for _, tc := range []struct{ url, want string }{
		{u.String(), "bucket no-such-bucket does not exist: create it"},
		{"gs://b?bogus=1", `unknown parameter "bogus"`},
		{"gs://b?endpoint=ftp://x", "endpoint"},
		{"gs://b?anonymous=maybe", "anonymous"},
		{"gs://b?private_key_path=/k.pem", "private_key_path without access_id"},
	} {
		_, err := blob.Open(t.Context(), tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s) = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
}
