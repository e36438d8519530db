package blob

// OwnerKey is the object at the root of a storage that names the store
// owning it (internal/bucketsetup writes it at start, ADR 0255). It is
// claimcheck's own, not a payload: the backstop, gc and fsck never count
// it as debris and nothing deletes it. No namespace can be named like
// it (a namespace starts with a letter or digit).
//
// A store that shares the storage on purpose leaves OwnerKey + "." + its
// id beside it (a sharer's marker); while one is there, no store collects
// debris, since each store's objects have no row in the other's metadata.
// Every marker sorts before any object of a namespace, so the first page
// of a listing shows them.
const OwnerKey = ".claimcheck-store"

// IsOwnerMarker reports whether key is the owner marker or a sharer's.
func IsOwnerMarker(key string) bool {
	return key == OwnerKey || IsSharerMarker(key)
}

// IsSharerMarker reports whether key is the marker of a store that
// shares the storage on purpose.
func IsSharerMarker(key string) bool {
	return len(key) > len(OwnerKey)+1 && key[:len(OwnerKey)+1] == OwnerKey+"."
}
