package server

import (
	"bytes"
	"io"
	"net/http"

	"github.com/claimcheck/claimcheck/server/api"
)

// Legal holds (ADR 0065): admin routes that set and lift holds on a claim
// or a namespace.

// holdReason reads the optional {"reason": "..."} body.
func holdReason(w http.ResponseWriter, r *http.Request) (string, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return "", invalidf("hold body: %v", err)
	}
	var req api.HoldRequest
	if len(bytes.TrimSpace(b)) > 0 {
		if err := api.DecodeJSON(b, `hold body (want {"reason":"TEXT"} or nothing)`, &req); err != nil {
			return "", err
		}
	}
	return req.Reason, nil
}

func (s *Server) setClaimHold(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	reason, err := holdReason(w, r)
	if err != nil {
		return err
	}
	if err := s.claims.SetHold(r.Context(), ref, reason); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) clearClaimHold(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	if err := s.claims.ClearHold(r.Context(), ref); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) setNamespaceHold(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	reason, err := holdReason(w, r)
	if err != nil {
		return err
	}
	if err := s.claims.SetNamespaceHold(r.Context(), ns, reason); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) clearNamespaceHold(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	if err := s.claims.ClearNamespaceHold(r.Context(), ns); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getNamespaceHold(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	hold, err := s.claims.NamespaceHold(r.Context(), ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.NamespaceHold{Hold: hold})
	return nil
}

// destroyNamespaceKey is crypto-shredding (engine/crypt.go, ADR 0066): DELETE
// /v1/namespaces/{ns}/key?confirm={ns}. The namespace must be repeated in
// confirm, so that a mistyped or replayed URL does not destroy data.
func (s *Server) destroyNamespaceKey(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	if got := r.URL.Query().Get("confirm"); got != ns {
		return invalidf("destroying the data key of %s makes its encrypted claims unreadable for good: repeat the namespace in the query, ?confirm=%s", ns, ns)
	}
	if err := s.claims.DestroyNamespaceKey(r.Context(), ns); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
