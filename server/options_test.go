package server

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

func TestPutOptions(t *testing.T) {
	digest := claimcheck.DigestOf([]byte("x"))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(api.HeaderDigest, digest)
	h.Set(api.HeaderConsumers, "2")
	h.Add(api.HeaderConsumerNames, "a")
	h.Add(api.HeaderConsumerNames, "b%2Cc")
	h.Set(api.HeaderLabels, "k=v")
	opts, err := putOptions(h, 42)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Size != 42 || opts.ContentType != "application/json" || opts.Digest != digest || opts.Consumers != 2 ||
		!slices.Equal(opts.ConsumerNames, []string{"a", "b,c"}) || opts.Labels["k"] != "v" {
		t.Fatalf("putOptions = %+v", opts)
	}
	// An unknown length (chunked) is Size 0.
	if opts, err := putOptions(http.Header{}, -1); err != nil || opts.Size != 0 {
		t.Fatalf("chunked: %+v, %v", opts, err)
	}
}

// FuzzPutOptions feeds the put's header parsers arbitrary values: no
// panic, and every refusal is an ErrInvalidArgument that names a header.
func FuzzPutOptions(f *testing.F) {
	f.Add(claimcheck.DigestOf(nil), "1", "a,b", "k=v,k2=v2")
	f.Add("sha256:XYZ", "-1", "a,a", "k")
	f.Add("", "", "", "")
	f.Add("", "99999999999999999999999", "%zz", "=,=")
	f.Fuzz(func(t *testing.T, digest, consumers, names, labels string) {
		h := http.Header{}
		for name, v := range map[string]string{
			api.HeaderDigest: digest, api.HeaderConsumers: consumers,
			api.HeaderConsumerNames: names, api.HeaderLabels: labels,
		} {
			if v != "" {
				h.Set(name, v)
			}
		}
		opts, err := putOptions(h, -1)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		if opts.Digest != "" && !claimcheck.ValidDigest(opts.Digest) {
			t.Fatalf("accepted digest %q", opts.Digest)
		}
		if opts.Consumers < 0 {
			t.Fatalf("accepted consumers %d", opts.Consumers)
		}
	})
}

func TestASCIIJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"m":"plain"}`: `{"m":"plain"}`,
		`{"m":"é"}`:     `{"m":"\u00e9"}`,
		`{"m":"😀"}`:     `{"m":"\ud83d\ude00"}`,
	} {
		if got := asciiJSON([]byte(in)); got != want {
			t.Errorf("asciiJSON(%s) = %s, want %s", in, got, want)
		}
	}
}
