package azurestore

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/claimcheck/claimcheck/blob"
)

const (
	// maxPresignTTL bounds a SAS like a V4 URL: a week.
	maxPresignTTL = 7 * 24 * time.Hour
	// maxPutBlob is the largest blob one Put Blob request writes (API
	// versions since 2019-12-12): a larger direct upload cannot be one PUT.
	maxPutBlob = 5000 << 20
	// clockSkew starts a SAS this much before now, so a service whose
	// clock is a little behind ours accepts it at once.
	clockSkew = 5 * time.Minute
)

// PresignPut implements blob.Presigner with a blob SAS for exactly this
// blob that may only create it (sp=c: no overwrite, no read, no delete,
// no list), until now+ttl (the upload's url_ttl, or its confirm_by when
// sooner). Create-only is what keeps a confirmed object as confirmed:
// the URL stays valid after the confirm, and with write permission its
// holder could replace the bytes of a blob that dedup may share with
// other claims. The PUT is a Put Blob, which needs the header x-ms-blob-type:
// BlockBlob. A SAS cannot bind the body's length or sha256: another body
// is stored, and the confirm, which hashes the object, refuses and
// deletes it, so the client can PUT again (ADR 0230). With an account key the SAS is signed by it; with an Azure AD
// identity it is a user delegation SAS, signed by a delegation key
// fetched from the service (the identity needs the
// generateUserDelegationKey action, part of Storage Blob Data
// Contributor).
func (b *Bucket) PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (blob.PresignedPut, error) {
	if err := blob.CheckPresign(key, size, sha256Hex, ttl, maxPresignTTL); err != nil {
		return blob.PresignedPut{}, err
	}
	if size > maxPutBlob {
		return blob.PresignedPut{}, fmt.Errorf("blob: presign %s: size %d: at most %d bytes go in one Put Blob; send larger payloads as resumable uploads", key, size, int64(maxPutBlob))
	}
	now := time.Now()
	expires := now.Add(ttl)
	v := sas.BlobSignatureValues{
		Version:       sas.Version,
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     now.Add(-clockSkew).UTC(),
		ExpiryTime:    expires.UTC(),
		Permissions:   (&sas.BlobPermissions{Create: true}).String(),
		ContainerName: b.name,
		BlobName:      b.prefix + key,
	}
	if b.https {
		v.Protocol = sas.ProtocolHTTPS
	}
	var (
		qp  sas.QueryParameters
		err error
	)
	if b.sharedKey != nil {
		qp, err = v.SignWithSharedKey(b.sharedKey)
	} else {
		var udc *service.UserDelegationCredential
		if udc, err = b.delegationKey(ctx, expires); err == nil {
			qp, err = v.SignWithUserDelegation(udc)
		}
	}
	if err != nil {
		return blob.PresignedPut{}, fmt.Errorf("blob: presign %s: %w", key, err)
	}
	return blob.PresignedPut{
		URL:     b.blockBlob(key).URL() + "?" + qp.Encode(),
		Method:  http.MethodPut,
		Headers: map[string]string{"Content-Type": "application/octet-stream", "X-Ms-Blob-Type": "BlockBlob"},
		Expires: expires,
	}, nil
}

// delegationTTL is how long a user delegation key is asked for; it is
// reused while it outlives the SAS being signed (the service allows up
// to 7 days).
const delegationTTL = 7*24*time.Hour - time.Hour

// delegationKey returns a user delegation key valid past until.
func (b *Bucket) delegationKey(ctx context.Context, until time.Time) (*service.UserDelegationCredential, error) {
	b.delegationMu.Lock()
	defer b.delegationMu.Unlock()
	if b.delegation != nil && b.delegationTo.After(until) {
		return b.delegation, nil
	}
	now := time.Now().UTC()
	to := now.Add(delegationTTL)
	start, expiry := now.Add(-clockSkew).Format(sas.TimeFormat), to.Format(sas.TimeFormat)
	udc, err := b.service.GetUserDelegationCredential(ctx, service.KeyInfo{Start: &start, Expiry: &expiry}, nil)
	if err != nil {
		return nil, fmt.Errorf("get a user delegation key (grant Storage Blob Data Contributor, or use an account key): %w", err)
	}
	b.delegation, b.delegationTo = udc, to
	return udc, nil
}
