// The overview's figures over time. The store keeps counters, not
// history, so the console samples them while it is open: every few
// seconds it asks the API for the sweeper's lag (GET /v1/sweeper), the
// namespaces' counters (GET /v1/namespaces) and the subscriptions'
// delivery state (GET /v1/subscriptions), each one read of counters or
// an index, never a scan, and keeps the last samples in memory. Closing
// the tab forgets them.

import { api, all } from './api.js';

const EVERY_MS = 5000;
const KEEP = 720; // an hour at one sample per 5 s

/** @type {{t: number, lag: number, deliveryLag: number, live: Record<string, number>, used: Record<string, number>}[]} */
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

/** Seconds a subscription's delivery is behind: since its failures began. */
export function deliveryLag(sub, nowMs = Date.now()) {
  if (!sub.failing_since) return 0;
  return Math.max(0, (nowMs - Date.parse(sub.failing_since)) / 1000);
}

async function sample() {
  try {
    const [sweeper, namespaces, subs] = await Promise.all([
      api('/v1/sweeper'),
      all('/v1/namespaces', 'namespaces', { query: { limit: 1000 } }),
      all('/v1/subscriptions', 'subscriptions', { query: { limit: 1000 } }),
    ]);
    const live = {};
    const used = {};
    for (const n of namespaces) {
      live[n.name] = n.usage.active_claims + n.usage.pending_claims;
      used[n.name] = n.usage.used_bytes;
    }
    const now = Date.parse(sweeper.now);
    samples.push({
      t: now / 1000, lag: sweeper.lag_seconds, live, used,
      deliveryLag: Math.max(0, ...subs.map((s) => deliveryLag(s, now))),
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
