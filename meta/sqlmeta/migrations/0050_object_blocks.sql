-- Block tables of plain objects (ADR 0257): the CRC32C of every 64 KiB
-- block of an object stored as its payload, so that a ranged read checks
-- the blocks it sends. Keyed by object key, not by blob: a repair hands
-- an object to another blob row and its table stays with it. sums is the
-- hex of the encoded table (version, block size, one CRC32C per block).
-- Objects written before, and objects of at most one block, have no row.
-- The row is deleted when the blob owning the object is collected.
CREATE TABLE object_blocks (
    object_key TEXT PRIMARY KEY,
    sums       TEXT NOT NULL
);
