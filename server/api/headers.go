package api

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/claimcheck/claimcheck"
)

// The structured request headers are lists in the HTTP sense (RFC 9110
// §5.6.1): elements separated by commas, optional white space around
// them, empty elements ignored, and several header lines of the same name
// equivalent to one line joining their values with commas. Each element
// is URL-query-escaped (url.QueryEscape), so keys, values and names may
// hold any UTF-8 text, commas and '=' included, and the header value stays
// plain ASCII.

// FormatLabels encodes labels for HeaderLabels: "k=v,k2=v2", keys sorted,
// each key and value query-escaped.
func FormatLabels(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(url.QueryEscape(k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(labels[k]))
	}
	return b.String()
}

// ParseLabels decodes a HeaderLabels value. It returns nil for an empty
// value. A key must not be empty or repeated; a value may be empty.
// Errors wrap claimcheck.ErrInvalidArgument.
func ParseLabels(v string) (map[string]string, error) {
	var labels map[string]string
	for elem := range listElements(v) {
		rawKey, rawValue, found := strings.Cut(elem, "=")
		if !found {
			return nil, headerErr(HeaderLabels, "element %q is not key=value", elem)
		}
		key, err := unescape(HeaderLabels, rawKey)
		if err != nil {
			return nil, err
		}
		value, err := unescape(HeaderLabels, rawValue)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, headerErr(HeaderLabels, "element %q has an empty key", elem)
		}
		if _, dup := labels[key]; dup {
			return nil, headerErr(HeaderLabels, "key %q appears twice", key)
		}
		if labels == nil {
			labels = make(map[string]string)
		}
		labels[key] = value
	}
	return labels, nil
}

// FormatNames encodes consumer names for HeaderConsumerNames: "a,b,c",
// each name query-escaped.
func FormatNames(names []string) string {
	escaped := make([]string, len(names))
	for i, n := range names {
		escaped[i] = url.QueryEscape(n)
	}
	return strings.Join(escaped, ",")
}

// ParseNames decodes a HeaderConsumerNames value. It returns nil for an
// empty value (empty elements are skipped, so no name is empty). Names
// must not be repeated: the list is a set. What a name may hold is the
// store's rule, checked on put. Errors wrap claimcheck.ErrInvalidArgument.
func ParseNames(v string) ([]string, error) {
	var names []string
	for elem := range listElements(v) {
		name, err := unescape(HeaderConsumerNames, elem)
		if err != nil {
			return nil, err
		}
		if slices.Contains(names, name) {
			return nil, headerErr(HeaderConsumerNames, "name %q appears twice", name)
		}
		names = append(names, name)
	}
	return names, nil
}

// ParseConsumers decodes a HeaderConsumers value: a decimal count, 0 or
// more (0 means the default, 1). Errors wrap claimcheck.ErrInvalidArgument.
func ParseConsumers(v string) (int, error) {
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || strings.HasPrefix(v, "+") {
		return 0, headerErr(HeaderConsumers, "%q is not a count (want a decimal integer, 0 or more)", v)
	}
	return n, nil
}

// ParseDigest checks a HeaderDigest value: "sha256:" and 64 lowercase hex
// digits. Errors wrap claimcheck.ErrInvalidArgument.
func ParseDigest(v string) (string, error) {
	v = strings.TrimSpace(v)
	if !claimcheck.ValidDigest(v) {
		return "", headerErr(HeaderDigest, "%q is not sha256:<64 lowercase hex digits>", v)
	}
	return v, nil
}

// listElements yields the non-empty, trimmed elements of an HTTP list.
func listElements(v string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for elem := range strings.SplitSeq(v, ",") {
			elem = strings.Trim(elem, " \t")
			if elem == "" {
				continue
			}
			if !yield(elem) {
				return
			}
		}
	}
}

func unescape(header, s string) (string, error) {
	u, err := url.QueryUnescape(s)
	if err != nil {
		return "", headerErr(header, "%q is not query-escaped: %v", s, err)
	}
	if !utf8.ValidString(u) {
		// Labels and names are stored as JSON text, which cannot carry
		// invalid UTF-8 unchanged.
		return "", headerErr(header, "%q is not valid UTF-8 once unescaped", s)
	}
	return u, nil
}

func headerErr(header, format string, args ...any) error {
	return fmt.Errorf("%w: header %s: %s", claimcheck.ErrInvalidArgument, header, fmt.Sprintf(format, args...))
}
