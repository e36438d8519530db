package masterkey_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/masterkey"
	"github.com/claimcheck/claimcheck/meta"
)

func key(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }

// TestRing: a data key wrapped by a previous master key unwraps by its
// id; one wrapped by an unknown master key is ErrUnavailable; an altered
// wrapped key is ErrChecksumMismatch; a repeated key is refused.
func TestRing(t *testing.T) {
	old, err := masterkey.New(key(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{7}, 32)
	dk := meta.DataKey{ID: "dk_1", Namespace: "ns", MasterKeyID: old.ID(), Wrapped: old.Wrap("ns", "dk_1", data)}

	ring, err := masterkey.New(key(2), []string{key(1)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ring.Unwrap(dk); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Unwrap with the previous master key = %x, %v", got, err)
	}
	other, err := masterkey.New(key(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Unwrap(dk); !errors.Is(err, claimcheck.ErrUnavailable) {
		t.Errorf("Unwrap without its master key: %v, want ErrUnavailable", err)
	}
	bad := dk
	bad.Wrapped = append([]byte(nil), dk.Wrapped...)
	bad.Wrapped[len(bad.Wrapped)-1] ^= 1
	if _, err := ring.Unwrap(bad); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Errorf("Unwrap of an altered key: %v, want ErrChecksumMismatch", err)
	}
	if _, err := masterkey.New(key(2), []string{key(2)}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("a previous key equal to master_key: %v, want ErrInvalidArgument", err)
	}
	if r, err := masterkey.New("", nil); r != nil || err != nil {
		t.Errorf("no master key = %v, %v, want nil, nil", r, err)
	}
}

// TestDataKeyOfObject: an encrypted object's key ends with its data key.
func TestDataKeyOfObject(t *testing.T) {
	if id, ok := masterkey.DataKeyOfObject("ns/a.b/blob.dk_x"); !ok || id != "dk_x" {
		t.Errorf("encrypted object: %q, %v", id, ok)
	}
	if _, ok := masterkey.DataKeyOfObject("ns.dk_x/blob"); ok {
		t.Error("a plain object under a dotted prefix named a data key")
	}
}
