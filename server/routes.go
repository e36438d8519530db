package server

import (
	"net/http"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
)

// The route table (ADR 0078): every route the server serves is one row
// here, and the row is all the server knows about it. New registers the
// rows on the mux, the guard (limits.go) and authorize (auth.go) read
// their permission from the row the request matched, and
// TestRouteTableMatchesDocs fails when docs/HTTP.md's route list (between
// its routes:begin and routes:end markers) says anything else, as
// TestRouteTableMatchesOpenAPI does when docs/openapi.yaml describes
// another set of routes (or another need for a key). So a route
// cannot be served without a permission, and cannot be added, changed or
// removed without the documentation following.

// route is one row of the route table.
type route struct {
	// pattern is the method and path, as http.ServeMux takes them; it
	// is also the route label of the HTTP metrics.
	pattern string
	// handler answers the request; its error is written by writeError.
	handler func(s *Server, w http.ResponseWriter, r *http.Request) error
	// op is the permission a key's role needs when auth is on (the role
	// table is in package auth). Empty on open routes.
	op auth.Op
	// target is what the route names, to check the key's tenant and
	// namespace against, or how it is credentialed (targetSigned,
	// targetOpen).
	target target
	// doc is the route's line in docs/HTTP.md: one line of markdown
	// without a "|".
	doc string
	// claimNS marks a claim route whose handler gives the ns query
	// parameter to the store (claimRef), which answers not_found for a
	// claim outside that namespace: authorisation checks the key against
	// ns then, instead of looking the claim's namespace up by its id (a
	// lookup every shard answers on a PostgreSQL distributed by
	// namespace, ADR 0264). The answer is the same either way.
	claimNS bool
	// only, when set, registers the route only on servers for which it
	// is true (the key routes need auth, /metrics a registry). Without
	// it the route answers 404 no_route there, as any unknown path.
	only func(s *Server) bool
	// json marks a route whose body is JSON: a request with a body must
	// say Content-Type: application/json, which no preflight-free
	// cross-origin request can (cors.go).
	json bool
}

// Paths the server hands out in answers, kept next to the table so that a
// URL it gives a client always leads to a route it serves (TestRouteTable
// checks they are in the table).
const (
	claimRoute      = "GET /v1/claims/{id}"
	uploadDataRoute = "PUT /v1/uploads/{id}/data"
)

// routes is the route table, in the order of docs/HTTP.md's list.
var routes = []route{
	{pattern: "PUT /v1/namespaces/{ns}/claims", handler: (*Server).put, op: auth.OpPut, target: targetNamespace,
		doc: "store the body as a new claim: `201` + ref JSON"},
	{pattern: claimRoute, handler: (*Server).redeem, op: auth.OpRedeem, target: targetClaim, claimNS: true,
		doc: "stream the payload (counts as a read): `200` + payload"},
	// A GET pattern also matches HEAD, and a redeem counts as a read
	// (delete_after_read starts its window on the first one), so a
	// curious `curl -I` must not get that far.
	{pattern: "HEAD /v1/claims/{id}", handler: (*Server).headNotAllowed, op: auth.OpRedeem, target: targetClaim,
		doc: "refused with `405` (a redeem counts as a read): use `/meta`"},
	{pattern: "GET /v1/claims/{id}/meta", handler: (*Server).stat, op: auth.OpStat, target: targetClaim,
		doc: "state, deadlines, counters: `200` + `ClaimInfo` JSON"},
	{pattern: "POST /v1/claims/{id}/release", handler: (*Server).release, op: auth.OpRelease, target: targetClaim, json: true, claimNS: true,
		doc: "a consumer is done with the claim (ack): `204`"},
	{pattern: "DELETE /v1/claims/{id}", handler: (*Server).delete, op: auth.OpDelete, target: targetClaim, claimNS: true,
		doc: "finish the claim now (reason `deleted`): `204`"},
	// Listing and extending (lifetime.go, ADR 0100, ADR 0101).
	{pattern: "GET /v1/namespaces/{ns}/claims", handler: (*Server).listClaims, op: auth.OpList, target: targetNamespace,
		doc: "a page of the namespace's claims, newest first: label selector, state, expiry window, cursor"},
	{pattern: "POST /v1/claims/{id}/extend", handler: (*Server).extendClaim, op: auth.OpExtend, target: targetClaim,
		doc: "move the claim's expiry later, up to `ttl.max_lifetime`: `200` + `ClaimInfo` JSON"},
	{pattern: "GET /v1/claims/{id}/events", handler: (*Server).claimEvents, op: auth.OpAdmin, target: targetClaim,
		doc: "the claim's audit trail (see \"Audit events\")"},
	{pattern: "GET /v1/namespaces", handler: (*Server).namespaces, op: auth.OpNamespace, target: targetList,
		doc: "a page of the namespaces the caller may see (by name; `cursor`, `limit`, `next`): policy, limits, usage"},
	{pattern: "GET /v1/namespaces/{ns}", handler: (*Server).namespaceInfo, op: auth.OpNamespace, target: targetNamespace,
		doc: "the namespace's effective policy, limits and usage"},
	{pattern: "GET /v1/namespaces/{ns}/events", handler: (*Server).namespaceEvents, op: auth.OpAdmin, target: targetNamespace,
		doc: "the namespace's audit trail"},
	// The key's own tenant only (events.go).
	{pattern: "GET /v1/events", handler: (*Server).tenantEvents, op: auth.OpAdmin, target: targetNone,
		doc: "the tenant's administrative events (API keys, failed authentications)"},

	{pattern: "GET /v1/sweeper", handler: (*Server).sweeperStatus, op: auth.OpAdmin, target: targetNone,
		doc: "how far the background sweeper is behind: the oldest due time, its age (`lag_seconds`) and the due backlog up to a bound, store-wide, with the due claims per namespace of the key's tenant"},

	// Subscriptions and the live stream (subscriptions.go): the key's own
	// tenant only, like GET /v1/events.
	{pattern: "GET /v1/events/stream", handler: (*Server).eventStream, op: auth.OpAdmin, target: targetNone,
		doc: "the tenant's events as they happen (Server-Sent Events; `Last-Event-ID` resumes)"},
	{pattern: "POST /v1/subscriptions", handler: (*Server).createSubscription, op: auth.OpAdmin, target: targetNone, json: true,
		doc: "push the tenant's events to a URL (signed CloudEvents): `201` + the subscription with its secret"},
	{pattern: "GET /v1/subscriptions", handler: (*Server).listSubscriptions, op: auth.OpAdmin, target: targetNone,
		doc: "a page of the tenant's subscriptions (by id; `cursor`, `limit`, `next`) and how delivery stands (never their secrets)"},
	{pattern: "DELETE /v1/subscriptions/{id}", handler: (*Server).deleteSubscription, op: auth.OpAdmin, target: targetNone,
		doc: "stop and remove a subscription: `204`"},
	{pattern: "POST /v1/subscriptions/{id}/resume", handler: (*Server).resumeSubscription, op: auth.OpAdmin, target: targetNone,
		doc: "deliver again to a dead-lettered subscription: `204`"},
	{pattern: "GET /v1/subscriptions/{id}/attempts", handler: (*Server).subscriptionAttempts, op: auth.OpAdmin, target: targetNone,
		doc: "a page of the subscription's parked and dead-lettered events (by seq; `cursor`, `limit`, `next`) with their attempts"},
	{pattern: "POST /v1/subscriptions/{id}/retry", handler: (*Server).retrySubscription, op: auth.OpAdmin, target: targetNone,
		doc: "deliver the subscription's parked and dead-lettered events now: how many (`retried`)"},
	{pattern: "POST /v1/subscriptions/{id}/replay", handler: (*Server).replaySubscription, op: auth.OpAdmin, target: targetNone,
		doc: "deliver again the events after `since` (an RFC 3339 time or an event seq): the cursor set"},

	// Legal holds, crypto-shredding and key rotation (holds.go, rewrap.go).
	{pattern: "PUT /v1/claims/{id}/hold", handler: (*Server).setClaimHold, op: auth.OpAdmin, target: targetClaim, json: true,
		doc: "put the claim on legal hold"},
	{pattern: "DELETE /v1/claims/{id}/hold", handler: (*Server).clearClaimHold, op: auth.OpAdmin, target: targetClaim,
		doc: "lift the claim's own hold"},
	{pattern: "GET /v1/namespaces/{ns}/hold", handler: (*Server).getNamespaceHold, op: auth.OpAdmin, target: targetNamespace,
		doc: "the namespace's hold, if any"},
	{pattern: "PUT /v1/namespaces/{ns}/hold", handler: (*Server).setNamespaceHold, op: auth.OpAdmin, target: targetNamespace, json: true,
		doc: "hold every claim of the namespace, present and future"},
	{pattern: "DELETE /v1/namespaces/{ns}/hold", handler: (*Server).clearNamespaceHold, op: auth.OpAdmin, target: targetNamespace,
		doc: "lift the namespace hold"},
	{pattern: "DELETE /v1/namespaces/{ns}/key", handler: (*Server).destroyNamespaceKey, op: auth.OpAdmin, target: targetNamespace,
		doc: "crypto-shredding: destroy the namespace's data key"},
	{pattern: "POST /v1/namespaces/{ns}/key/rewrap", handler: (*Server).rewrapNamespaceKey, op: auth.OpAdmin, target: targetNamespace,
		doc: "master key rotation: rewrap the namespace's data key"},

	// Direct uploads (uploads.go).
	{pattern: "POST /v1/namespaces/{ns}/uploads", handler: (*Server).initUpload, op: auth.OpPut, target: targetNamespace, json: true,
		doc: "start a direct upload: reserve quota, answer where to PUT"},
	// The token in the URL is the credential: no key, per-address limits.
	{pattern: uploadDataRoute, handler: (*Server).uploadData, op: auth.OpPut, target: targetSigned,
		doc: "the payload of an upload this server receives itself (`?token=`)"},
	{pattern: "POST /v1/uploads/{id}/confirm", handler: (*Server).confirmUpload, op: auth.OpPut, target: targetClaim,
		doc: "check the uploaded object and commit it like a put"},

	// Resumable uploads over tus (tus.go). The answers are tus's; errors
	// are claimcheck's JSON. A store without them answers 404.
	{pattern: "POST /v1/namespaces/{ns}/tus", handler: (*Server).tusCreate, op: auth.OpPut, target: targetNamespace,
		doc: "start a resumable upload (tus creation, `Upload-Length`; the body may carry its first bytes): `201` + `Location`"},
	{pattern: "OPTIONS /v1/namespaces/{ns}/tus", handler: (*Server).tusOptions, op: auth.OpPut, target: targetNamespace,
		doc: "tus discovery: version, extensions, the namespace's max size, checksum algorithms"},
	{pattern: "HEAD /v1/tus/{id}", handler: (*Server).tusHead, op: auth.OpPut, target: targetClaim,
		doc: "how many bytes of the upload are stored (`Upload-Offset`); its ref once complete"},
	{pattern: "PATCH /v1/tus/{id}", handler: (*Server).tusPatch, op: auth.OpPut, target: targetClaim,
		doc: "append a chunk at `Upload-Offset`; the last one completes the upload: `204` + `Claimcheck-Ref`"},
	{pattern: "DELETE /v1/tus/{id}", handler: (*Server).tusDelete, op: auth.OpPut, target: targetClaim,
		doc: "terminate the upload: its bytes removed, its reservation refunded: `204`"},

	// Dead letters (deadletters.go).
	{pattern: "GET /v1/dead-letters", handler: (*Server).listDeadLetters, op: auth.OpAdmin, target: targetDeadLetters,
		doc: "a page of the blobs the sweeper parked"},
	{pattern: "POST /v1/dead-letters/retry", handler: (*Server).retryDeadLetters, op: auth.OpAdmin, target: targetDeadLetters,
		doc: "retry the page `GET /v1/dead-letters` would answer"},
	{pattern: "GET /v1/dead-letters/{id}", handler: (*Server).getDeadLetter, op: auth.OpAdmin, target: targetDeadLetter,
		doc: "one dead letter"},
	{pattern: "POST /v1/dead-letters/{id}/retry", handler: (*Server).retryDeadLetter, op: auth.OpAdmin, target: targetDeadLetter,
		doc: "put the blob back in the sweeper's queue"},

	// API keys (keys.go): only where there are keys.
	{pattern: "POST /v1/keys", handler: (*Server).createKey, op: auth.OpKeys, target: targetNone, json: true, only: (*Server).authOn,
		doc: "a new key in the caller's tenant (auth on only)"},
	{pattern: "GET /v1/keys", handler: (*Server).listKeys, op: auth.OpKeys, target: targetNone, only: (*Server).authOn,
		doc: "a page of the tenant's keys (`cursor`, `limit`, `next`), never their tokens (auth on only)"},
	{pattern: "DELETE /v1/keys/{key}", handler: (*Server).revokeKey, op: auth.OpKeys, target: targetNone, only: (*Server).authOn,
		doc: "revoke a key (auth on only)"},

	// Probes and metrics: for load balancers and Prometheus, which hold
	// no key; they bypass the guard and its limits.
	{pattern: "GET /healthz", handler: (*Server).healthz, target: targetOpen,
		doc: "the process is up: `200 ok`"},
	{pattern: "GET /readyz", handler: (*Server).readyz, target: targetOpen,
		doc: "the store's database answers: `200 ready`, else `503`"},
	{pattern: "GET /metrics", handler: (*Server).serveMetrics, target: targetOpen, only: (*Server).metricsOn,
		doc: "Prometheus text format (when the server has a registry)"},
}

// register puts the table's routes for this server on its mux. Every
// route but the open ones passes the guard first: authentication and
// authorisation from its row, then the per-client limits.
func (s *Server) register() {
	for _, rt := range routes {
		if rt.only != nil && !rt.only(s) {
			continue
		}
		s.mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if rt.target != targetOpen {
				var done func()
				var ok bool
				if w, r, done, ok = s.guard(w, r, rt); !ok {
					return
				}
				defer done()
				if err := checkRequest(r, rt.pattern); err != nil {
					s.writeError(w, r, err) // strict.go
					return
				}
			}
			if err := jsonBody(r, rt); err != nil {
				s.writeError(w, r, err)
				return
			}
			if rt.target == targetNamespace && s.auth == nil {
				// The path's namespace is checked once, before the
				// handler; with auth on, authorize has checked it.
				if err := claimcheck.ValidateNamespace(r.PathValue("ns")); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			if err := rt.handler(s, w, r); err != nil {
				s.writeError(w, r, err)
			}
		})
	}
}

// routePath is the path of the route of pattern with values put in for
// its wildcards, in order, for answers that point at it (Location,
// upload URLs). Values are used as they are: callers pass ids, which are
// URL-safe.
func routePath(pattern string, values ...string) string {
	_, p, _ := strings.Cut(pattern, " ")
	for _, v := range values {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p, '}')
		if i < 0 || j < i {
			break
		}
		p = p[:i] + v + p[j+1:]
	}
	return p
}

func (s *Server) authOn() bool    { return s.auth != nil }
func (s *Server) metricsOn() bool { return s.gathered != nil }

// healthz answers GET /healthz: the process is up and serving;
// dependencies are /readyz's job.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n")) // a prober that hung up has its answer
	return nil
}

// serveMetrics answers GET /metrics from Config.Gatherer.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	s.gathered.ServeHTTP(w, r)
	return nil
}
