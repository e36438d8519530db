// Package compress holds the codecs of stored objects: zstd (the default),
// gzip (level 6, for compatibility) and none, plus the "auto" choice that
// skips compression when a sample of the payload does not shrink.
//
// Codecs are streaming in both directions: the engine never holds a whole
// payload in memory.
package compress
