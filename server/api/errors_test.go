package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// TestErrorTable checks every sentinel: its code and status, and that the
// code leads back to the same sentinel.
func TestErrorTable(t *testing.T) {
	at := time.Date(2026, 1, 9, 13, 24, 0, 0, time.UTC)
	tests := []struct {
		err    error
		code   string
		status int
		reason string
	}{
		{claimcheck.ErrNotFound, CodeNotFound, http.StatusNotFound, ""},
		{claimcheck.ErrGone, CodeGone, http.StatusGone, ""},
		{claimcheck.ErrExpired, CodeExpired, http.StatusGone, ""},
		{claimcheck.ErrChecksumMismatch, CodeChecksumMismatch, http.StatusUnprocessableEntity, ""},
		{claimcheck.ErrQuotaExceeded, CodeQuotaExceeded, http.StatusForbidden, ""},
		{claimcheck.ErrTooLarge, CodeTooLarge, http.StatusRequestEntityTooLarge, ""},
		{claimcheck.ErrInvalidArgument, CodeInvalidArgument, http.StatusBadRequest, ""},
		{claimcheck.ErrUnauthenticated, CodeUnauthenticated, http.StatusUnauthorized, ""},
		{claimcheck.ErrPermissionDenied, CodePermissionDenied, http.StatusForbidden, ""},
		{claimcheck.ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable, ""},
		{&claimcheck.RangeError{ID: "cc_x", Offset: 10, Size: 5}, CodeRangeNotSatisfiable, http.StatusRequestedRangeNotSatisfiable, ""},
		{&claimcheck.GoneError{ID: "cc_x", Reason: claimcheck.ReasonDeleted, At: at}, CodeGone, http.StatusGone, "deleted"},
		{&claimcheck.GoneError{ID: "cc_x", Reason: claimcheck.ReasonReleased}, CodeGone, http.StatusGone, "released"},
		{&claimcheck.GoneError{ID: "cc_x", Reason: claimcheck.ReasonExpired}, CodeExpired, http.StatusGone, "expired"},
		// An error wrapping two sentinels gets the more specific code.
		{fmt.Errorf("%w: %w", claimcheck.ErrInvalidArgument, claimcheck.ErrTooLarge), CodeTooLarge, http.StatusRequestEntityTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.code+"/"+tt.err.Error(), func(t *testing.T) {
			wrapped := fmt.Errorf("redeem cc_x: %w", tt.err)
			body, status, ok := ErrorOf(wrapped)
			if !ok || body.Code != tt.code || status != tt.status || body.Reason != tt.reason {
				t.Fatalf("ErrorOf = %+v, %d, %v; want code %s, status %d, reason %q", body, status, ok, tt.code, tt.status, tt.reason)
			}
			if body.Message != wrapped.Error() {
				t.Errorf("message %q, want %q", body.Message, wrapped.Error())
			}
			if got := StatusOf(body.Code); got != tt.status {
				t.Errorf("StatusOf(%s) = %d, want %d", body.Code, got, tt.status)
			}
			back := body.Sentinel("cc_x")
			if gone, ok := errors.AsType[*claimcheck.GoneError](tt.err); ok {
				// Two *GoneErrors are equal by value, not identity.
				got, ok := errors.AsType[*claimcheck.GoneError](back)
				if !ok || *got != *gone {
					t.Errorf("Sentinel = %#v, want %#v", back, gone)
				}
				return
			}
			// A plain ErrGone or ErrExpired comes back as a *GoneError,
			// which matches it.
			if !errors.Is(back, tt.err) && !errors.Is(tt.err, back) {
				t.Errorf("Sentinel = %v, does not match %v", back, tt.err)
			}
		})
	}
}

func TestErrorOfUnknown(t *testing.T) {
	if body, status, ok := ErrorOf(errors.New("disk on fire")); ok {
		t.Fatalf("ErrorOf(unknown) = %+v, %d, true; want false", body, status)
	}
	body, status := Internal()
	if body.Code != CodeInternal || status != http.StatusInternalServerError || StatusOf(CodeInternal) != status {
		t.Fatalf("Internal() = %+v, %d", body, status)
	}
	for _, code := range []string{CodeInternal, CodeNoRoute, CodeMethodNotAllowed, "from_the_future"} {
		if err := (Error{Code: code}).Sentinel("cc_x"); err != nil {
			t.Errorf("Sentinel(%s) = %v, want nil", code, err)
		}
	}
}
