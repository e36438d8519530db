package api

import (
	"net/url"
	"strconv"
)

// QueryDryRun is the query parameter of POST /v1/namespaces/{ns}/key/rewrap
// that asks for a report without changes.
const QueryDryRun = "dry_run"

// ParseRewrapQuery reads the query of the rewrap route: dry_run, at most
// once, a boolean (true, false, 1, 0); anything else is refused, so a
// typo never turns a dry run into a real one.
func ParseRewrapQuery(v url.Values) (dryRun bool, err error) {
	for name, vals := range v {
		if name != QueryDryRun {
			return false, queryErr(name, "unknown parameter; known: %s", QueryDryRun)
		}
		if len(vals) != 1 {
			return false, queryErr(name, "given %d times, want once", len(vals))
		}
	}
	s := v.Get(QueryDryRun)
	if s == "" {
		return false, nil
	}
	dryRun, err = strconv.ParseBool(s)
	if err != nil {
		return false, queryErr(QueryDryRun, "%q: want true or false", clip(s))
	}
	return dryRun, nil
}
