// Package dispatch pushes claim events to subscribers over HTTP (ADR
// 0240): the webhook dispatcher.
//
// The events table is a transactional outbox: every state change writes
// its event in its own transaction (meta/sqlmeta/audit.go), and the
// dispatcher reads the table from each subscription's cursor, posts the
// matching events to the subscription's URL as CloudEvents 1.0 in the
// structured JSON mode, signed the Standard Webhooks way (signature.go),
// and moves the cursor in the metadata store once the receiver answered
// 2xx. So a put writes nothing for a subscription and never waits for a
// delivery, and a dispatcher that dies loses nothing: its successor
// resumes after the cursor and sends again at most the events that were
// in flight. One replica dispatches at a time, the holder of the
// DispatchLease (the lease mechanism the sweeper uses).
//
// The dispatcher runs on the machine that serves the puts, so a delivery
// is kept cheap (ADR 0240, decision 15): its own kept HTTP/1.1
// connections (conn.go), the body encoded and signed into reused
// buffers, the subscriptions read once a second rather than every tick,
// an idle subscription looked at less often, and the rounds a tick
// starts served by one read of each tenant's feed (ADR 0278,
// feedpage.go), not a read each.
//
// A refused event holds back its own claim only (ADR 0277, parking.go):
// it is parked with the claim's later events behind it, in the metadata
// store, and retried on its own backoff while the cursor moves past the
// other claims' events; it is dead-lettered alone after max_attempts or
// dead_letter_after. A subscription is dead-lettered only when every
// delivery to it failed for dead_letter_after.
//
// Targets are checked twice, by the outbound address policy of package
// egress (ADR 0268): the URL when a subscription is made, and every
// address at connect time, so a name that resolves to a private address
// later (DNS rebinding) is refused too. A subscription's last error is
// redacted by it: a tenant never reads what a name resolved to.
// Redirects are not followed.
//
// The dispatcher is given what it needs (the metadata store, a function
// that opens a subscription's secret, the clock) and never calls back
// into the engine.
package dispatch
