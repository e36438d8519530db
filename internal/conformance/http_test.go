package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// httpDriver is plain HTTP as docs/HTTP.md describes it: curl when it is
// installed, else Go's net/http sending the same requests.
type httpDriver struct{ curl string }

func newHTTPDriver() httpDriver {
	p, _ := exec.LookPath("curl")
	return httpDriver{curl: p}
}

func (d httpDriver) name() string {
	if d.curl == "" {
		return "HTTP (net/http, no curl)"
	}
	return "curl"
}

func (httpDriver) skip() string { return "" }

// answer is one HTTP response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request: with curl (a process per request, its headers
// and body read back from files) or with net/http.
func (d httpDriver) do(ctx context.Context, tg *target, method, url string, header map[string]string, body []byte) (answer, error) {
	if d.curl == "" {
		return netDo(ctx, method, url, header, body)
	}
	dir, err := os.MkdirTemp(tg.dir, "curl-")
	if err != nil {
		return answer{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	args := []string{"-sS", "-X", method, "-D", filepath.Join(dir, "head"), "-o", filepath.Join(dir, "body"), "-w", "%{http_code}"}
	for k, v := range header {
		args = append(args, "-H", k+": "+v)
	}
	if body != nil {
		f := filepath.Join(dir, "req")
		if err := os.WriteFile(f, body, 0o600); err != nil {
			return answer{}, err
		}
		// No "Expect: 100-continue" wait, and no form content type
		// unless the caller set one.
		args = append(args, "--data-binary", "@"+f, "-H", "Expect:")
		if _, ok := header["Content-Type"]; !ok {
			args = append(args, "-H", "Content-Type:")
		}
	}
	out, err := exec.CommandContext(ctx, d.curl, append(args, url)...).Output()
	if err != nil {
		return answer{}, fmt.Errorf("curl %s %s: %w", method, url, err)
	}
	status, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return answer{}, fmt.Errorf("curl %s %s: status %q", method, url, out)
	}
	head, _ := os.ReadFile(filepath.Join(dir, "head"))
	resp, _ := os.ReadFile(filepath.Join(dir, "body"))
	return answer{status: status, header: parseHead(head), body: resp}, nil
}

// parseHead reads the header lines curl -D wrote (after the last status
// line, should there be more than one).
func parseHead(b []byte) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "HTTP/") {
			h = http.Header{}
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(textproto.TrimString(k), textproto.TrimString(v))
		}
	}
	return h
}

func netDo(ctx context.Context, method, url string, header map[string]string, body []byte) (answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}, err
}

// api sends a request to the server with the API key.
func (d httpDriver) api(ctx context.Context, tg *target, method, path string, header map[string]string, body []byte, want int) (answer, error) {
	h := map[string]string{"Authorization": "Bearer " + tg.key}
	for k, v := range header {
		h[k] = v
	}
	a, err := d.do(ctx, tg, method, tg.url+path, h, body)
	if err == nil && a.status != want {
		err = fmt.Errorf("%s %s: %d, want %d: %s", method, path, a.status, want, bytes.TrimSpace(a.body))
	}
	return a, err
}

func (d httpDriver) run(ctx context.Context, tg *target, path string) outcome {
	data := payload(d.name() + "/" + tg.backend + "/" + path)
	ns := namespace(d.name(), path)
	var ref []byte
	var err error
	switch path {
	case "direct":
		ref, err = d.direct(ctx, tg, ns, data)
	case "tus":
		ref, err = d.tus(ctx, tg, ns, data)
	default:
		var a answer
		a, err = d.api(ctx, tg, http.MethodPut, "/v1/namespaces/"+ns+"/claims",
			map[string]string{"Content-Type": "application/octet-stream"}, data, http.StatusCreated)
		ref = a.body
	}
	if err != nil {
		return failErr(err)
	}
	id, err := refID(ref)
	if err != nil {
		return failErr(err)
	}
	switch path {
	case "redeem":
		err = d.redeem(ctx, tg, id, nil, data)
	case "range":
		err = d.redeem(ctx, tg, id, map[string]string{"Range": "bytes=1000-5999"}, data[1000:6000])
	case "release":
		_, err = d.api(ctx, tg, http.MethodPost, "/v1/claims/"+id+"/release", nil, nil, http.StatusNoContent)
	case "events":
		err = d.events(ctx, tg, ns, id)
	}
	if err != nil {
		return failErr(err)
	}
	return tg.checkRef(ctx, ref, data, path)
}

func (d httpDriver) redeem(ctx context.Context, tg *target, id string, header map[string]string, want []byte) error {
	status := http.StatusOK
	if header != nil {
		status = http.StatusPartialContent
	}
	a, err := d.api(ctx, tg, http.MethodGet, "/v1/claims/"+id, header, nil, status)
	if err != nil {
		return err
	}
	if !bytes.Equal(a.body, want) {
		return fmt.Errorf("GET /v1/claims/%s: %d bytes that differ from the %d expected", id, len(a.body), len(want))
	}
	return nil
}

// direct: init with the payload's sha256, PUT other bytes of its size
// (refused by the PUT, or else by the confirm, which removes them),
// then the right bytes, and confirm.
func (d httpDriver) direct(ctx context.Context, tg *target, ns string, data []byte) ([]byte, error) {
	sum := sha256.Sum256(data)
	init, _ := json.Marshal(map[string]any{"size": len(data), "sha256": hex.EncodeToString(sum[:])})
	a, err := d.api(ctx, tg, http.MethodPost, "/v1/namespaces/"+ns+"/uploads",
		map[string]string{"Content-Type": "application/json"}, init, http.StatusCreated)
	if err != nil {
		return nil, err
	}
	var up claimcheck.Upload
	if err := json.Unmarshal(a.body, &up); err != nil {
		return nil, fmt.Errorf("init answer: %w", err)
	}
	wrong := bytes.Clone(data)
	for i := range wrong {
		wrong[i] ^= 0xff
	}
	first, err := d.do(ctx, tg, up.Method, up.URL, up.Headers, wrong)
	if err != nil {
		return nil, err
	}
	confirm := "/v1/uploads/" + up.ID + "/confirm"
	c, err := d.api(ctx, tg, http.MethodPost, confirm, nil, nil, http.StatusOK)
	if err == nil {
		return nil, fmt.Errorf("other bytes than the declared sha256 were confirmed (their PUT: %d): %s", first.status, c.body)
	}
	again, err := d.do(ctx, tg, up.Method, up.URL, up.Headers, data)
	if err != nil {
		return nil, err
	}
	if again.status/100 != 2 {
		return nil, fmt.Errorf("the right bytes after a refused upload: %s %d: %s", up.Method, again.status, bytes.TrimSpace(again.body))
	}
	c, err = d.api(ctx, tg, http.MethodPost, confirm, nil, nil, http.StatusOK)
	return c.body, err
}

// tus: create with the length and the sha256, one PATCH with every byte;
// its answer names the claim's ref.
func (d httpDriver) tus(ctx context.Context, tg *target, ns string, data []byte) ([]byte, error) {
	sum := sha256.Sum256(data)
	meta := "sha256 " + b64(hex.EncodeToString(sum[:]))
	a, err := d.api(ctx, tg, http.MethodPost, "/v1/namespaces/"+ns+"/tus", map[string]string{
		"Tus-Resumable": "1.0.0", "Upload-Length": strconv.Itoa(len(data)), "Upload-Metadata": meta,
	}, nil, http.StatusCreated)
	if err != nil {
		return nil, err
	}
	loc := a.header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = tg.url + loc
	}
	p, err := d.do(ctx, tg, http.MethodPatch, loc, map[string]string{
		"Authorization": "Bearer " + tg.key, "Tus-Resumable": "1.0.0", "Upload-Offset": "0",
		"Content-Type": "application/offset+octet-stream",
	}, data)
	if err != nil {
		return nil, err
	}
	ref := p.header.Get("Claimcheck-Ref")
	if p.status != http.StatusNoContent || ref == "" {
		return nil, fmt.Errorf("PATCH %s: %d, Claimcheck-Ref %q: %s", loc, p.status, ref, bytes.TrimSpace(p.body))
	}
	return []byte(ref), nil
}

// events reads GET /v1/events/stream from the oldest event retained until
// the created event of claim id: curl -N in a process ended when it came.
func (d httpDriver) events(ctx context.Context, tg *target, ns, id string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	url := tg.url + "/v1/events/stream?type=created&ns=" + ns + "&last_event_id=oldest"
	auth := "Bearer " + tg.key
	if d.curl == "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !scanFor(resp.Body, id) {
			return fmt.Errorf("GET %s: %s, without the created event of %s", url, resp.Status, id)
		}
		return nil
	}
	cmd := exec.CommandContext(ctx, d.curl, "-sSN", "-H", "Authorization: "+auth, url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if !scanFor(out, id) {
		return fmt.Errorf("curl -N %s ended without the created event of %s", url, id)
	}
	return nil
}

// refID is the claim id of a ref's JSON.
func refID(refJSON []byte) (string, error) {
	ref, err := claimcheck.ParseRef(lastLine(refJSON))
	if err != nil {
		return "", fmt.Errorf("ref %q: %w", lastLine(refJSON), err)
	}
	return ref.ID, nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
