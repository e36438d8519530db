package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/claimcheck/claimcheck/blob"
)

// TestS3ClientPutHeaders checks what a single-request write sends: over
// HTTPS an unsigned body, over HTTP a body signed with its sha256, and no
// flexible checksum unless the configuration asks for one.
func TestS3ClientPutHeaders(t *testing.T) {
	body := strings.Repeat("claimcheck ", 1000)
	sum := sha256.Sum256([]byte(body))
	for _, tc := range []struct {
		name      string
		tls       bool
		checksum  aws.RequestChecksumCalculation
		wantHash  string
		wantCRC32 bool
		// known is given to the writer as the payload's sha256
		// (blob.PayloadHasher). The server here checks nothing, so a sum that
		// is not the body's shows whether the SDK used it or hashed.
		known []byte
	}{
		{name: "https", tls: true, wantHash: "UNSIGNED-PAYLOAD"},
		{name: "http", wantHash: hex.EncodeToString(sum[:])},
		{name: "https-known-sum", tls: true, wantHash: "UNSIGNED-PAYLOAD", known: bytes.Repeat([]byte{7}, 32)},
		{name: "http-known-sum", wantHash: strings.Repeat("07", 32), known: bytes.Repeat([]byte{7}, 32)},
		{name: "http-checksum-configured", checksum: aws.RequestChecksumCalculationWhenSupported,
			wantHash: hex.EncodeToString(sum[:]), wantCRC32: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				got http.Header
				in  []byte
			)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got, in = r.Header.Clone(), b
				mu.Unlock()
			})
			srv := httptest.NewUnstartedServer(h)
			if tc.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			base := s3.New(s3.Options{
				Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
				Credentials:                credentials.NewStaticCredentialsProvider("id", "secret", ""),
				HTTPClient:                 srv.Client(),
				RequestChecksumCalculation: tc.checksum,
			})
			chosen := checksumChoice{request: tc.checksum != aws.RequestChecksumCalculationUnset}
			b := &Bucket{client: s3Client(base, chosen), name: "bucket",
				sse: s3SSE{typ: types.ServerSideEncryptionAes256}}
			w, err := b.NewWriter(t.Context(), "ns/key")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(w, body); err != nil {
				t.Fatal(err)
			}
			if tc.known != nil {
				w.(blob.PayloadHasher).SetPayloadSHA256(tc.known)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if string(in) != body {
				t.Errorf("server received %d bytes, want the %d written", len(in), len(body))
			}
			if h := got.Get("X-Amz-Content-Sha256"); h != tc.wantHash {
				t.Errorf("X-Amz-Content-Sha256 = %q, want %q", h, tc.wantHash)
			}
			if crc := got.Get("X-Amz-Checksum-Crc32") != ""; crc != tc.wantCRC32 {
				t.Errorf("X-Amz-Checksum-Crc32 sent = %v, want %v", crc, tc.wantCRC32)
			}
			if sse := got.Get("X-Amz-Server-Side-Encryption"); sse != "AES256" {
				t.Errorf("X-Amz-Server-Side-Encryption = %q, want AES256 from the URL", sse)
			}
			// Presigning (already unsigned) is left alone by the tuning.
			if _, err := b.PresignPut(t.Context(), "ns/direct", int64(len(body)), hex.EncodeToString(sum[:]), time.Minute); err != nil {
				t.Errorf("PresignPut: %v", err)
			}
		})
	}
}

// TestS3ClientSettings checks the tuning Open applies to the SDK client,
// and that checksum settings written in the URL win over its defaults.
func TestS3ClientSettings(t *testing.T) {
	t.Setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "")
	t.Setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "")
	for _, tc := range []struct {
		query    string
		request  aws.RequestChecksumCalculation
		response aws.ResponseChecksumValidation
	}{
		{"", aws.RequestChecksumCalculationWhenRequired, aws.ResponseChecksumValidationWhenRequired},
		{"&request_checksum_calculation=when_supported&response_checksum_validation=when_supported",
			aws.RequestChecksumCalculationWhenSupported, aws.ResponseChecksumValidationWhenSupported},
	} {
		s, err := blob.Open(context.Background(), "s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true"+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		o := s.(*Bucket).client.Options()
		if o.RequestChecksumCalculation != tc.request || o.ResponseChecksumValidation != tc.response {
			t.Errorf("query %q: checksums = %v/%v, want %v/%v", tc.query,
				o.RequestChecksumCalculation, o.ResponseChecksumValidation, tc.request, tc.response)
		}
		hc, ok := o.HTTPClient.(interface{ GetTransport() *http.Transport })
		if !ok {
			t.Fatalf("HTTP client %T has no transport to inspect", o.HTTPClient)
		}
		if n := hc.GetTransport().MaxIdleConnsPerHost; n != s3IdleConnsPerHost {
			t.Errorf("MaxIdleConnsPerHost = %d, want %d", n, s3IdleConnsPerHost)
		}
		s.Close()
	}
}

func TestSSEOf(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  s3SSE
	}{
		{"", s3SSE{}},
		{"ssetype=aes256", s3SSE{typ: types.ServerSideEncryptionAes256}},
		{"ssetype=aws:kms&kmskeyid=key-1", s3SSE{typ: types.ServerSideEncryptionAwsKms, kmsKeyID: "key-1"}},
	} {
		q, _ := url.ParseQuery(tc.query)
		if got := sseOf(q); got != tc.want {
			t.Errorf("sseOf(%q) = %+v, want %+v", tc.query, got, tc.want)
		}
	}
}
