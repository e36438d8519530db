package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server/api"
)

var anyServingLine = regexp.MustCompile(`url=(https?://127\.0\.0\.1:\d+)`)

// serveProc runs `claimcheck serve` with args on a free loopback port and
// returns its URL and its log so far (read after the process ended, at
// cleanup, it is complete).
func serveProc(t *testing.T, bin, dir string, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CLAIMCHECK_SERVER=", "CLAIMCHECK_API_KEY=")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	logs := &bytes.Buffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if m := anyServingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			t.Errorf("server exited: %v\n%s", err, logs.String())
		}
	})
	select {
	case u := <-urls:
		return u, logs
	case <-done:
		t.Fatalf("server exited before serving:\n%s", logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not report its address:\n%s", logs.String())
	}
	return "", nil
}

// runEnv executes the CLI with extra environment variables.
func runEnv(t *testing.T, bin string, env []string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER=", "CLAIMCHECK_API_KEY="), env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestKeysAndAuthEndToEnd: the first admin key is made offline, the
// server with auth refuses requests without a key, takes the key from
// --api-key and from CLAIMCHECK_API_KEY, keeps tenants apart, and a key
// revoked offline (another process) is refused by the running server at
// its next request.
func TestKeysAndAuthEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(cfg, []byte(`
auth: true
tenants: { acme: {}, beta: {} }
namespaces:
  orders: { tenant: acme }
  billing: { tenant: beta }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	store := []string{"--config", cfg, "--data", dir}
	keys := func(args ...string) string {
		t.Helper()
		out, stderr, code := runEnv(t, bin, []string{"USER=ops"}, nil, append(append([]string{"keys"}, args...), store...)...)
		if code != 0 {
			t.Fatalf("keys %v: exit %d: %s", args, code, stderr)
		}
		return strings.TrimSpace(out)
	}
	acme := keys("create", "--tenant", "acme", "--role", "producer", "--name", "uploader")
	beta := keys("create", "--tenant", "beta", "--role", "admin")
	if !strings.HasPrefix(acme, "cck_") {
		t.Fatalf("keys create printed %q, want a cck_ token", acme)
	}
	if _, stderr, code := runEnv(t, bin, nil, nil, append([]string{"keys", "create", "--tenant", "nope", "--role", "admin"}, store...)...); code == 0 || !strings.Contains(stderr, `tenant "nope" is not declared`) {
		t.Fatalf("keys create for an undeclared tenant: exit %d %s", code, stderr)
	}
	if _, stderr, code := runEnv(t, bin, nil, nil, append([]string{"keys", "create", "--tenant", "acme", "--role", "admin", "--ns", "billing"}, store...)...); code == 0 || !strings.Contains(stderr, "belongs to tenant beta") {
		t.Fatalf("keys create limited to another tenant's namespace: exit %d %s", code, stderr)
	}
	var list api.KeyList
	if err := json.Unmarshal([]byte(keys("ls", "--json")), &list); err != nil || len(list.Keys) != 2 {
		t.Fatalf("keys ls --json: %+v %v", list, err)
	}
	if strings.Contains(keys("ls"), acme[len(acme)-20:]) {
		t.Fatal("keys ls must never print a token")
	}

	url, _ := serveProc(t, bin, dir, store...)
	server := "--server=" + url
	_, stderr, code := runEnv(t, bin, nil, strings.NewReader("hello"), "put", server, "--ns", "orders", "-")
	// The CLI names its own flag and variable, never the HTTP header.
	if code == 0 || !strings.Contains(stderr, "--api-key") || !strings.Contains(stderr, "CLAIMCHECK_API_KEY") || strings.Contains(stderr, "Authorization") {
		t.Fatalf("put without a key: exit %d %s", code, stderr)
	}
	if _, stderr, code := runEnv(t, bin, nil, strings.NewReader("hello"), "put", server, "--api-key", "cck_nope", "--ns", "orders", "-"); code == 0 || !strings.Contains(stderr, "refused the API key of --api-key") {
		t.Fatalf("put with a bad key: exit %d %s", code, stderr)
	}
	refJSON, stderr, code := runEnv(t, bin, nil, strings.NewReader("hello"), "put", server, "--api-key", acme, "--ns", "orders", "-")
	if code != 0 {
		t.Fatalf("put with --api-key: exit %d %s", code, stderr)
	}
	ref, err := claimcheck.ParseRef([]byte(refJSON))
	if err != nil {
		t.Fatal(err)
	}
	// The environment variable works too.
	if _, stderr, code := runEnv(t, bin, []string{"CLAIMCHECK_API_KEY=" + acme}, nil, "stat", server, ref.ID); code != 0 {
		t.Fatalf("stat with CLAIMCHECK_API_KEY: exit %d %s", code, stderr)
	}
	// Another tenant's admin does not see the claim: not found, exit 3.
	if _, stderr, code := runEnv(t, bin, nil, nil, "get", server, "--api-key", beta, ref.ID); code != 3 {
		t.Fatalf("get of acme's claim with beta's admin key: exit %d %s, want 3 (not found)", code, stderr)
	}

	// Revoke offline, in another process, while the server runs.
	var acmeID string
	for _, k := range list.Keys {
		if k.Tenant == "acme" {
			acmeID = k.ID
		}
	}
	if out := keys("revoke", acmeID); !strings.Contains(out, "revoked key "+acmeID) {
		t.Fatalf("keys revoke printed %q", out)
	}
	if _, stderr, code := runEnv(t, bin, nil, nil, "stat", server, "--api-key", acme, ref.ID); code == 0 || !strings.Contains(stderr, "revoked") {
		t.Fatalf("stat right after the revoke: exit %d %s, want refused as revoked", code, stderr)
	}

	// The tenant's audit trail has its keys, made and revoked offline by
	// the operator (cli:$USER), and the refused request with the revoked
	// key; only the tenant's own admin reads it.
	acmeAdmin := keys("create", "--tenant", "acme", "--role", "admin")
	acmeAdminID, _, _ := strings.Cut(strings.TrimPrefix(acmeAdmin, "cck_"), "_")
	out, stderr, code := runEnv(t, bin, nil, nil, "events", server, "--api-key", acmeAdmin, "--tenant", "acme")
	if code != 0 {
		t.Fatalf("events --tenant acme: exit %d %s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e claimcheck.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events line %q: %v", line, err)
		}
		if e.Tenant != "acme" || strings.Contains(line, acme[len(acme)-20:]) {
			t.Fatalf("event %s: not acme's, or holds the token", line)
		}
		got = append(got, e.Kind+"/"+e.Actor+"/"+e.Detail)
	}
	want := []string{
		"key_created/cli:ops/key " + acmeID + "; tenant acme; role producer",
		"key_revoked/cli:ops/key " + acmeID + "; tenant acme; role producer",
		"auth_failed/" + acmeID + "/revoked key; key " + acmeID + "; from 127.0.0.1",
		"key_created/cli:ops/key " + acmeAdminID + "; tenant acme; role admin",
	}
	if len(got) != len(want) {
		t.Fatalf("events --tenant acme:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) { // the failure's address ends with the client's port
			t.Errorf("event %d: %q, want %q…", i, got[i], want[i])
		}
	}
	if _, stderr, code := runEnv(t, bin, nil, nil, "events", server, "--api-key", beta, "--tenant", "acme"); code != 3 {
		t.Fatalf("events --tenant acme with beta's admin key: exit %d %s, want 3 (not found)", code, stderr)
	}
	if _, stderr, code := runEnv(t, bin, nil, nil, "events", server, "--api-key", beta, "--tenant", "beta", "--ns", "billing"); code != 2 {
		t.Fatalf("events with both --tenant and --ns: exit %d %s, want 2 (usage)", code, stderr)
	}
}

// TestServeTLS: with a certificate and key in the config the server
// speaks HTTPS only, and the Go client round-trips a payload over it.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	certPEM, keyPEM, pool := selfSigned(t)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(cfg, []byte("http:\n  tls: { cert_file: "+certFile+", key_file: "+keyFile+" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	url, _ := serveProc(t, bin, dir, "--config", cfg, "--data", dir)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("serve reported %s, want an https URL", url)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c, err := client.New(url, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("tls round trip "), 10000)
	ref, err := c.Put(t.Context(), "tls", bytes.NewReader(payload), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Redeem(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(p)
	p.Close()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("redeem over TLS: %d bytes, %v", len(got), err)
	}
	// Plain HTTP to the TLS port gets no API answer.
	resp, err := http.Get("http://" + strings.TrimPrefix(url, "https://") + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS port")
		}
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "claimcheck test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pool
}
