package claimcheck

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func sampleRef() Ref {
	return Ref{
		ID: "cc_7QmFx0aZ3kLq9WbVtYc2Rg", Namespace: "video-processing",
		Size: 1186475, StoredSize: 351204, Compression: "zstd",
		Digest:    "sha256:" + strings.Repeat("ab", 32),
		CreatedAt: time.Date(2026, 1, 9, 13, 24, 0, 0, time.UTC),
		ExpiresAt: time.Date(2026, 1, 10, 13, 24, 0, 0, time.UTC),
	}
}

func TestRefRoundTrip(t *testing.T) {
	ref := sampleRef()
	data, err := ref.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRef(data)
	if err != nil {
		t.Fatalf("ParseRef(%s): %v", data, err)
	}
	if got != ref {
		t.Fatalf("round trip changed the ref:\n got %+v\nwant %+v", got, ref)
	}
	if !strings.HasPrefix(string(data), `{"type":"claim_check_ref","v":1,`) {
		t.Fatalf("encoding does not start with type and version: %s", data)
	}
}

// The worst case (longest namespace, 1 TiB sizes, timestamps far in the
// future) must fit the size budget.
func TestRefWorstCaseFits(t *testing.T) {
	ref := sampleRef()
	ref.Namespace = strings.Repeat("n", MaxNamespaceLen)
	ref.Size, ref.StoredSize = int64(MaxMaxSize), int64(MaxMaxSize)+1<<20
	ref.CreatedAt = time.Date(2200, 12, 31, 23, 59, 59, 0, time.UTC)
	ref.ExpiresAt = ref.CreatedAt.Add(100 * 365 * 24 * time.Hour)
	data, _ := ref.MarshalJSON()
	if len(data) > MaxRefSize {
		t.Fatalf("worst-case ref is %d bytes, budget %d: %s", len(data), MaxRefSize, data)
	}
	if _, err := ParseRef(data); err != nil {
		t.Fatal(err)
	}
}

func TestParseRefRejects(t *testing.T) {
	good := sampleRef().String()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "empty"},
		{"not json", "hello", "not a JSON reference"},
		{"wrong type", strings.Replace(good, RefType, "other", 1), `type is "other"`},
		{"future version", strings.Replace(good, `"v":1`, `"v":2`, 1), "unsupported version 2"},
		{"missing version", strings.Replace(good, `"v":1,`, ``, 1), "unsupported version 0"},
		{"unknown field", strings.Replace(good, `"v":1,`, `"v":1,"extra":true,`, 1), "unknown field"},
		{"bad id", strings.Replace(good, "cc_7QmF", "xx_7QmF", 1), "not a claim id"},
		{"bad namespace", strings.Replace(good, "video-processing", "../etc", 1), "namespace"},
		{"bad digest", strings.Replace(good, "sha256:ab", "md5:ab", 1), "digest"},
		{"negative size", strings.Replace(good, `"size":1186475`, `"size":-1`, 1), "negative"},
		{"bad compression", strings.Replace(good, `"zstd"`, `"lz4"`, 1), "compression"},
		{"trailing data", good + `{}`, "top-level value"},
		{"too long", `{"type":"claim_check_ref","v":1,"id":"` + strings.Repeat("a", 2000) + `"}`, "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRef([]byte(tc.in))
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParseRef(%q) = %v, want ErrInvalidArgument", tc.in, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func FuzzParseRef(f *testing.F) {
	f.Add([]byte(sampleRef().String()))
	f.Add([]byte(`{"type":"claim_check_ref","v":2}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ref, err := ParseRef(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		// Whatever parses must re-encode to something that parses to the
		// same ref.
		again, err := ParseRef([]byte(ref.String()))
		if err != nil || again != ref {
			t.Fatalf("re-encoding %+v: %+v, %v", ref, again, err)
		}
	})
}

func TestGoneErrorMatches(t *testing.T) {
	expired := error(&GoneError{ID: "x", Reason: ReasonExpired})
	released := error(&GoneError{ID: "x", Reason: ReasonReleased})
	if !errors.Is(expired, ErrGone) || !errors.Is(expired, ErrExpired) {
		t.Fatal("expired gone error must match ErrGone and ErrExpired")
	}
	if !errors.Is(released, ErrGone) || errors.Is(released, ErrExpired) {
		t.Fatal("released gone error must match ErrGone only")
	}
}

// The hand-written checks of ids and digests accept exactly what their
// patterns do.
func FuzzValidIDsMatchPatterns(f *testing.F) {
	claimID := regexp.MustCompile(`^cc_[A-Za-z0-9_-]{22}$`)
	blobID := regexp.MustCompile(`^b_[A-Za-z0-9_-]{22}$`)
	digest := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	for _, s := range []string{
		sampleRef().ID, sampleRef().Digest, "b_7QmFx0aZ3kLq9WbVtYc2Rg", "",
		"cc_7QmFx0aZ3kLq9WbVtYc2R", "cc_7QmFx0aZ3kLq9WbVtYc2Rg\n", "cc_7QmFx0aZ3kLq9WbVtYc2R=",
		"sha256:" + strings.Repeat("AB", 32), "sha256:" + strings.Repeat("ab", 32) + "\n", "SHA256:" + strings.Repeat("ab", 32),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidClaimID(s), claimID.MatchString(s); got != want {
			t.Errorf("ValidClaimID(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidBlobID(s), blobID.MatchString(s); got != want {
			t.Errorf("ValidBlobID(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidDigest(s), digest.MatchString(s); got != want {
			t.Errorf("ValidDigest(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}

// BenchmarkParseRef is the decoding of every put's answer by a client.
func BenchmarkParseRef(b *testing.B) {
	data := []byte(sampleRef().String())
	for b.Loop() {
		if _, err := ParseRef(data); err != nil {
			b.Fatal(err)
		}
	}
}
