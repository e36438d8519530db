package api

// Resumable uploads speak tus 1.0.0 (docs/HTTP.md, "Resumable uploads
// (tus)"). The names below are the protocol's, shared by the server and
// the Go client so that both sides spell every header the same way.

// TusVersion is the only tus version served and spoken.
const TusVersion = "1.0.0"

// The tus headers.
const (
	HeaderTusResumable      = "Tus-Resumable"
	HeaderTusVersion        = "Tus-Version"
	HeaderTusExtension      = "Tus-Extension"
	HeaderTusMaxSize        = "Tus-Max-Size"
	HeaderTusChecksumAlgo   = "Tus-Checksum-Algorithm"
	HeaderUploadLength      = "Upload-Length"
	HeaderUploadOffset      = "Upload-Offset"
	HeaderUploadMetadata    = "Upload-Metadata"
	HeaderUploadExpires     = "Upload-Expires"
	HeaderUploadChecksum    = "Upload-Checksum"
	HeaderUploadDeferLength = "Upload-Defer-Length"
	HeaderUploadConcat      = "Upload-Concat"
)

// ContentTypeTusPatch is the Content-Type of a PATCH that carries bytes.
const ContentTypeTusPatch = "application/offset+octet-stream"

// StatusChecksumMismatch is tus's answer to a chunk or a payload whose
// checksum did not match; nothing of it was stored.
const StatusChecksumMismatch = 460
