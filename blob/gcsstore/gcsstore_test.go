package gcsstore_test

import (
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	_ "github.com/claimcheck/claimcheck/blob/gcsstore"
	"github.com/claimcheck/claimcheck/internal/testsvc"
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
