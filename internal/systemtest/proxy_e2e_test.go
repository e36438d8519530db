package systemtest

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// TestUploadThroughReverseProxy runs `claimcheck serve` behind a
// TLS-terminating reverse proxy that publishes it under a path prefix,
// configured with http.public_url, and `claimcheck upload` as a user
// outside would: it only knows the proxy's URL, and the upload URL the
// server answers must lead there too. A bad public_url stops serve with
// an error naming the field.
func TestUploadThroughReverseProxy(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()

	t.Run("bad public_url", func(t *testing.T) {
		cfg := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(cfg, []byte("http:\n  public_url: claims.example.com/claimcheck\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, bin, nil, "serve", "--config", cfg, "--data", dir, "--listen", "127.0.0.1:0")
		if code == 0 || !strings.Contains(stderr, `http.public_url "claims.example.com/claimcheck"`) {
			t.Fatalf("serve with a bad public_url: exit %d: %s", code, stderr)
		}
	})

	t.Run("upload", func(t *testing.T) {
		certPEM, keyPEM, _ := selfSigned(t)
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		caFile := filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		proxy := httptest.NewUnstartedServer(nil)
		public := "https://" + proxy.Listener.Addr().String() + "/claimcheck"

		cfg := filepath.Join(dir, "claimcheck.yaml")
		if err := os.WriteFile(cfg, []byte("http:\n  public_url: "+public+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		backend, err := url.Parse(startServer(t, bin, dir, "--config", cfg, "--data", dir))
		if err != nil {
			t.Fatal(err)
		}
		var dataPuts atomic.Int64
		rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(backend)
			pr.SetXForwarded()
			pr.Out.URL.Path = strings.TrimPrefix(pr.Out.URL.Path, "/claimcheck")
			pr.Out.URL.RawPath = ""
		}}
		proxy.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/data") {
				dataPuts.Add(1)
			}
			rp.ServeHTTP(w, r)
		})
		proxy.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		proxy.StartTLS()
		t.Cleanup(proxy.Close)

		data := make([]byte, 2<<20)
		rand.Read(data)
		file := filepath.Join(dir, "payload.bin")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		trust := []string{"SSL_CERT_FILE=" + caFile} // the CLI trusts the proxy's certificate
		out, stderr, code := runEnv(t, bin, trust, nil, "upload", "--server", public, "--ns", "media", file)
		if code != 0 {
			t.Fatalf("upload through the proxy: exit %d: %s", code, stderr)
		}
		if dataPuts.Load() != 1 {
			t.Fatalf("the payload PUT went through the proxy %d times, want once", dataPuts.Load())
		}
		ref, err := claimcheck.ParseRef([]byte(out))
		if err != nil {
			t.Fatalf("upload printed %q: %v", out, err)
		}
		got := filepath.Join(dir, "got.bin")
		if _, stderr, code := runEnv(t, bin, trust, nil, "get", "--server", public, "-o", got, ref.ID); code != 0 {
			t.Fatalf("get through the proxy: exit %d: %s", code, stderr)
		}
		if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("get wrote %d bytes, %v; want the uploaded %d", len(b), err, len(data))
		}
	})
}
