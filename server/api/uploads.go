package api

import (
	"fmt"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// HeaderIdempotencyKey on POST /v1/namespaces/{ns}/uploads makes a
// repeated init with the same key (per namespace) return the same upload.
const HeaderIdempotencyKey = "Idempotency-Key"

// InitUploadRequest is the JSON body of POST /v1/namespaces/{ns}/uploads.
// The answer is a claimcheck.Upload.
type InitUploadRequest struct {
	Size int64 `json:"size"`
	// SHA256 is the payload's sha256: 64 lowercase hex digits, or the
	// "sha256:<hex>" form of refs.
	SHA256        string            `json:"sha256"`
	ContentType   string            `json:"content_type,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Consumers     int               `json:"consumers,omitempty"`
	ConsumerNames []string          `json:"consumer_names,omitempty"`
}

// ParseInitUploadRequest decodes the body of POST
// /v1/namespaces/{ns}/uploads strictly (DecodeJSON): one object, no
// unknown field, nothing after it, and size and sha256 present (a body
// without size used to make an upload of size 0). Errors wrap
// claimcheck.ErrInvalidArgument and name the field.
func ParseInitUploadRequest(b []byte) (InitUploadRequest, error) {
	// The same fields, with the required ones as pointers, so that an
	// absent field is told apart from a zero one.
	var wire struct {
		Size          *int64            `json:"size"`
		SHA256        *string           `json:"sha256"`
		ContentType   string            `json:"content_type"`
		Labels        map[string]string `json:"labels"`
		Consumers     int               `json:"consumers"`
		ConsumerNames []string          `json:"consumer_names"`
	}
	const what = `upload init body (want {"size":N,"sha256":"HEX",…})`
	if err := DecodeJSON(b, what, &wire); err != nil {
		return InitUploadRequest{}, err
	}
	switch {
	case wire.Size == nil:
		return InitUploadRequest{}, fmt.Errorf("%w: upload init body: field \"size\" is required (the payload's length in bytes)", claimcheck.ErrInvalidArgument)
	case *wire.Size < 0:
		return InitUploadRequest{}, fmt.Errorf("%w: upload init body: field \"size\": must not be negative, got %d", claimcheck.ErrInvalidArgument, *wire.Size)
	case wire.SHA256 == nil:
		return InitUploadRequest{}, fmt.Errorf("%w: upload init body: field \"sha256\" is required (the payload's sha256, 64 lowercase hex digits)", claimcheck.ErrInvalidArgument)
	}
	return InitUploadRequest{
		Size: *wire.Size, SHA256: *wire.SHA256, ContentType: wire.ContentType, Labels: wire.Labels,
		Consumers: wire.Consumers, ConsumerNames: wire.ConsumerNames,
	}, nil
}

// UploadRequest converts the wire form into the engine's request, with the
// idempotency key from its header.
func (r InitUploadRequest) UploadRequest(idempotencyKey string) (claimcheck.UploadRequest, error) {
	digest := r.SHA256
	if !strings.HasPrefix(digest, "sha256:") {
		digest = "sha256:" + digest
	}
	if !claimcheck.ValidDigest(digest) {
		return claimcheck.UploadRequest{}, fmt.Errorf("%w: sha256 %q: want 64 lowercase hex digits", claimcheck.ErrInvalidArgument, r.SHA256)
	}
	return claimcheck.UploadRequest{
		Size: r.Size, Digest: digest, ContentType: r.ContentType, Labels: r.Labels,
		Consumers: r.Consumers, ConsumerNames: r.ConsumerNames, IdempotencyKey: idempotencyKey,
	}, nil
}

// InitUploadRequestOf is the wire form of req (the Go client sends it).
func InitUploadRequestOf(req claimcheck.UploadRequest) InitUploadRequest {
	return InitUploadRequest{
		Size: req.Size, SHA256: strings.TrimPrefix(req.Digest, "sha256:"), ContentType: req.ContentType,
		Labels: req.Labels, Consumers: req.Consumers, ConsumerNames: req.ConsumerNames,
	}
}
