package azurestore_test

import (
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/azurestore"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/internal/testsvc"
)

// sasUnchecked is why the suite's refused-body checks do not apply: a
// SAS grants a blob, not a body.
const sasUnchecked = "a SAS cannot bind a Put Blob's length or sha256 (Azure checks only an MD5 the client would have to send); ConfirmUpload hashes the object and refuses it (ADR 0230)"

func TestAzure(t *testing.T) {
	u := testsvc.AzureURL(t)
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) },
		blobtest.Options{PresignLengthUnchecked: sasUnchecked, PresignSumUnchecked: sasUnchecked})
}

func TestAzurePrefix(t *testing.T) {
	u := testsvc.AzureURL(t) + "?prefix=under/a/prefix/"
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) },
		blobtest.Options{PresignLengthUnchecked: sasUnchecked, PresignSumUnchecked: sasUnchecked})
}
