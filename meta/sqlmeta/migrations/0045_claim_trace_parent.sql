-- The W3C traceparent of the span that created a claim (ADR 0250): a
-- redeem, release or extend of the claim links its span to it, so a
-- consumer's trace leads to its producer's even when the message that
-- carried the reference lost its headers. NULL when no sampled span
-- created the claim (tracing off).
ALTER TABLE claims ADD COLUMN trace_parent TEXT;
