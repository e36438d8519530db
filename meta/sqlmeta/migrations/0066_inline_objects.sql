-- Inline objects (ADR 0292): the bytes of a small payload kept in the
-- metadata database instead of the object store, for namespaces that set
-- inline_below. A row is an object, keyed like one (the key's first
-- segment is the namespace, the distribution key): a blob row owns it by
-- its object key and the sweeper deletes it by key, as it deletes an
-- object in the bucket. data is the object's bytes as they would be
-- stored in the bucket (compressed, encrypted); SQLite keeps a bound
-- []byte as a blob whatever the column's declared type.
CREATE TABLE inline_objects (
    namespace  TEXT NOT NULL,
    object_key TEXT NOT NULL,
    data       BYTEA NOT NULL,
    size       BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (namespace, object_key)
);
