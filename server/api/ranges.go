package api

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// CodeRangeNotSatisfiable answers a Range that selects no byte of the
// payload (416, with Content-Range: bytes */SIZE).
const CodeRangeNotSatisfiable = "range_not_satisfiable"

// HeaderRange, HeaderContentRange and HeaderAcceptRanges are the range
// headers of a redeem (RFC 9110 §14).
const (
	HeaderRange        = "Range"
	HeaderContentRange = "Content-Range"
	HeaderAcceptRanges = "Accept-Ranges"
)

// ByteRange is one range of a Range header in the terms of
// claimcheck.Claims.RedeemRange: Offset and Length, Offset < 0 for a suffix.
// None is set for a range that is well formed but selects nothing
// whatever the size ("bytes=-0", or a last position before the first):
// RFC 9110 makes both unsatisfiable.
type ByteRange struct {
	Offset, Length int64
	None           bool
}

// ParseRange reads the value of a Range header. ok is false when the
// header is to be ignored and the whole payload answered (RFC 9110
// §14.2): another unit than bytes, or several ranges (a multipart answer
// buys a claim-check client nothing; it asks for one range at a time).
// A bytes range that is not well formed is an ErrInvalidArgument naming
// the header.
func ParseRange(v string) (r ByteRange, ok bool, err error) {
	unit, spec, found := strings.Cut(strings.TrimSpace(v), "=")
	if !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		if !found {
			return r, false, fmt.Errorf("%w: header Range: %q is not unit=ranges (want e.g. bytes=0-1023)", claimcheck.ErrInvalidArgument, clipped(v))
		}
		return r, false, nil
	}
	if strings.Contains(spec, ",") {
		return r, false, nil
	}
	bad := func(why string) (ByteRange, bool, error) {
		return ByteRange{}, false, fmt.Errorf("%w: header Range: %q: %s (want bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX)", claimcheck.ErrInvalidArgument, clipped(v), why)
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return bad("no '-'")
	}
	num := func(s string) (int64, bool) {
		if s == "" || len(s) > 18 || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	switch {
	case first == "":
		n, ok := num(last)
		if !ok {
			return bad("the suffix length is not a decimal number")
		}
		if n == 0 {
			return ByteRange{None: true}, true, nil
		}
		return ByteRange{Offset: -n}, true, nil
	case last == "":
		a, ok := num(first)
		if !ok {
			return bad("the first position is not a decimal number")
		}
		return ByteRange{Offset: a, Length: -1}, true, nil
	default:
		a, ok1 := num(first)
		b, ok2 := num(last)
		if !ok1 || !ok2 {
			return bad("a position is not a decimal number")
		}
		if b < a {
			return ByteRange{None: true}, true, nil
		}
		return ByteRange{Offset: a, Length: b - a + 1}, true, nil
	}
}

// FormatRange is the Range header asking for RedeemRange's offset and
// length.
func FormatRange(offset, length int64) string {
	switch {
	case offset < 0:
		return fmt.Sprintf("bytes=%d", offset)
	case length < 0:
		return fmt.Sprintf("bytes=%d-", offset)
	default:
		return fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
	}
}

// FormatContentRange is the Content-Range of a part of a payload of size
// bytes.
func FormatContentRange(start, n, size int64) string {
	return fmt.Sprintf("bytes %d-%d/%d", start, start+n-1, size)
}

// ParseContentRange reads "bytes FIRST-LAST/SIZE" (a 206) or
// "bytes */SIZE" (a 416; start and n are then 0).
func ParseContentRange(v string) (start, n, size int64, err error) {
	bad := fmt.Errorf("header Content-Range: %q is not bytes FIRST-LAST/SIZE", clipped(v))
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, total, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	if size, err = strconv.ParseInt(total, 10, 64); err != nil || size < 0 {
		return 0, 0, 0, bad
	}
	if rng == "*" {
		return 0, 0, size, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first || last >= size {
		return 0, 0, 0, bad
	}
	return first, last - first + 1, size, nil
}

func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
