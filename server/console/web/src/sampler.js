// The overview's figures over time. The store keeps counters, not
// history, so the console samples them while it is open: every few
// seconds it asks the API for the sweeper's lag and due backlog
// (GET /v1/sweeper: bounded reads of the due indexes), the
// namespaces' counters (GET /v1/namespaces) and the subscriptions'
// delivery state (GET /v1/subscriptions), each one read of counters or
// an index, never a scan, and keeps the last samples in memory. Closing
// the tab forgets them.

import { api, all } from './api.js';

const EVERY_MS = 5000;
const KEEP = 720; // an hour at one sample per 5 s

/** @type {{t: number, lag: number|null, due: number|null, deliveryLag: number|null, live: Record<string, number>, used: Record<string, number>}[]} */
export const samples = [];
let timer;
let listeners = new Set();
let lastError = null;

/** The latest error of a sample, if the last one failed. */
export function samplingError() { return lastError; }

/** Calls f after each new sample; returns the function that stops it. */
export function onSample(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}

/**
 * Seconds a subscription's delivery is behind: since every delivery
 * began to fail (the subscription's failing_since), or since its oldest
 * parked event began to fail (ADR 0277: the other claims' events flow
 * meanwhile); 0 when nothing waits. attempts are the first of
 * GET /v1/subscriptions/{id}/attempts, oldest first.
 */
export function deliveryLag(sub, attempts = [], nowMs = Date.now()) {
  const since = [sub.failing_since, attempts.find((a) => a.state === 'parked')?.failing_since]
    .filter(Boolean).map((t) => Date.parse(t));
  if (!since.length) return 0;
  return Math.max(0, (nowMs - Math.min(...since)) / 1000);
}

// The first parked events of the first subscriptions: enough for the lag.
async function firstAttempts(subs) {
  return Promise.all(subs.slice(0, 50).map((s) =>
    api('/v1/subscriptions/' + encodeURIComponent(s.id) + '/attempts', { query: { limit: 20 } }).then((p) => p.attempts, () => [])));
}

function unlessForbidden(v) {
  return (err) => {
    if (err?.status === 403) return v;
    throw err;
  };
}

async function sample() {
  try {
    // A key that is not a tenant-wide admin's may not read the sweeper
    // or the subscriptions: those figures are then missing, not an error.
    const [sweeper, namespaces, subs] = await Promise.all([
      api('/v1/sweeper').catch(unlessForbidden(null)),
      all('/v1/namespaces', 'namespaces', { query: { limit: 1000 } }),
      all('/v1/subscriptions', 'subscriptions', { query: { limit: 1000 } }).catch(unlessForbidden(null)),
    ]);
    const live = {};
    const used = {};
    for (const n of namespaces) {
      live[n.name] = n.usage.active_claims + n.usage.pending_claims;
      used[n.name] = n.usage.used_bytes;
    }
    const now = sweeper ? Date.parse(sweeper.now) : Date.now();
    const attempts = subs ? await firstAttempts(subs) : [];
    samples.push({
      t: now / 1000, lag: sweeper?.lag_seconds ?? null, due: sweeper?.due ?? null, live, used,
      deliveryLag: subs ? Math.max(0, ...subs.map((s, i) => deliveryLag(s, attempts[i], now))) : null,
      waiting: (subs ?? []).map((s, i) => deliveryLag(s, attempts[i], now) > 0),
      namespaces, sweeper, subs,
    });
    if (samples.length > KEEP) samples.shift();
    lastError = null;
  } catch (err) {
    lastError = err;
  }
  for (const f of listeners) f();
}

/** Starts sampling (at once, then every few seconds); stop ends it. */
export function start() {
  stop();
  sample();
  timer = setInterval(sample, EVERY_MS);
}

export function stop() {
  clearInterval(timer);
  samples.length = 0;
  listeners = new Set();
}

/** The next sample, whenever it comes. */
export function next() {
  return new Promise((resolve) => { const off = onSample(() => { off(); resolve(); }); });
}
