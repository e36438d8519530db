// Package azurestore is the storage backend of azblob:// URLs: Azure
// Blob Storage, and its emulator Azurite. Its optional abilities, each
// the way Azure offers it (ADR 0230): SAS URLs for direct uploads, with
// the least permissions and the upload's url_ttl; appends as staged
// blocks of a block blob, committed at the end; the CORS rules of the
// storage account's blob service; and lifecycle rules in the account's
// lifecycle management policy. That policy belongs to the account's
// management API (Azure Resource Manager), not to the blob service a
// container URL names: the URL's account_resource_id names the account
// there, and without it the lifecycle rules are unreachable (the
// start-up set-up warns that the safety net is absent). Importing the
// package registers its scheme with blob.Open.
//
// URL form: azblob://CONTAINER?prefix=P&endpoint=URL&storage_account=A&account_resource_id=ID.
// Credentials, in this order: a connection string
// (AZURE_STORAGE_CONNECTION_STRING), an account key
// (AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY), else Azure's default
// chain (azidentity.DefaultAzureCredential: environment service
// principal, workload identity, managed identity, the Azure CLI's
// login). endpoint is the blob service's URL (an emulator:
// http://127.0.0.1:10000/devstoreaccount1), by default the connection
// string's or https://ACCOUNT.blob.core.windows.net; storage_account
// names the account when no variable does. prefix puts every key under
// P. account_resource_id is the account's Azure resource ID
// (/subscriptions/SUB/resourceGroups/GROUP/providers/Microsoft.Storage/storageAccounts/ACCOUNT),
// reached with Azure AD credentials from the default chain.
package azurestore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// Scheme is the URL scheme of the backend: azblob://.
const Scheme = azureblob.Scheme

func init() { blob.Register(Scheme, open) }

// Bucket is the Store for one container of Azure Blob Storage: the
// portable Bucket, with the optional abilities Azure has, done with the
// SDK's clients.
type Bucket struct {
	*gocloudbucket.Bucket
	service   *service.Client
	container *container.Client
	name      string
	prefix    string
	// sharedKey signs SAS URLs when the credentials are an account key;
	// otherwise they are signed with a user delegation key (delegation).
	sharedKey *azblob.SharedKeyCredential
	https     bool // the endpoint is HTTPS: SAS URLs then allow HTTPS only

	delegationMu sync.Mutex
	delegation   *service.UserDelegationCredential
	delegationTo time.Time // when the delegation key expires

	// policies is the account's lifecycle management policy, nil when
	// the URL names no account_resource_id (LifecycleRules then says
	// so, wrapping blob.ErrNoLifecycle).
	policies *policies
}

var (
	_ blob.Store          = (*Bucket)(nil)
	_ blob.Presigner      = (*Bucket)(nil)
	_ blob.Appender       = (*Bucket)(nil)
	_ blob.CORSConfigurer = (*Bucket)(nil)
	_ blob.Lifecycler     = (*Bucket)(nil)
)

var params = []string{"prefix", "endpoint", "storage_account", "account_resource_id"}

// open opens an azblob:// URL: the service client from the credentials
// found, gocloud's bucket over its container client, and a check that
// the container is there and the credentials may write, list and
// delete in it (checkAccess).
func open(ctx context.Context, u *url.URL) (blob.Store, error) {
	fail := func(err error) (blob.Store, error) {
		return nil, fmt.Errorf("blob: open %s: %w", gocloudbucket.Redact(u), err)
	}
	if u.Host == "" {
		return fail(errors.New("no container: want azblob://CONTAINER"))
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(params, k) {
			return fail(fmt.Errorf("unknown parameter %q (want %s)", k, strings.Join(params, ", ")))
		}
	}
	svc, key, err := newService(q.Get("endpoint"), q.Get("storage_account"))
	if err != nil {
		return fail(err)
	}
	cc := svc.NewContainerClient(u.Host)
	gb, err := azureblob.OpenBucket(ctx, cc, nil)
	if err != nil {
		return fail(err)
	}
	prefix := q.Get("prefix")
	if prefix != "" {
		gb = gcblob.PrefixedBucket(gb, prefix)
	}
	b := &Bucket{
		Bucket:  gocloudbucket.New(gb, gocloudbucket.Options{StartAfter: startFrom(prefix), HTTPStatus: httpStatus}),
		service: svc, container: cc, name: u.Host, prefix: prefix, sharedKey: key,
		https: strings.HasPrefix(strings.ToLower(svc.URL()), "https://"),
	}
	if rid := q.Get("account_resource_id"); rid != "" {
		// The management plane takes Azure AD tokens only, whatever
		// credentials the blob service uses.
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return fail(fmt.Errorf("account_resource_id: no Azure AD credentials for the management API (a service principal, workload or managed identity, or the Azure CLI's login): %w", err))
		}
		if b.policies, err = newPolicies(rid, cred, nil, u.Host, prefix); err != nil {
			return fail(err)
		}
	}
	if err := b.checkAccess(ctx); err != nil {
		_ = b.Close()
		return fail(err)
	}
	return b, nil
}

// startFrom makes a listing start at the key token: Azure's page
// markers are opaque, its startFrom takes a blob name (the URL's prefix
// included, which gocloud's prefixed bucket does not add to it).
func startFrom(prefix string) func(token string) func(as func(any) bool) error {
	return func(token string) func(as func(any) bool) error {
		return func(as func(any) bool) error {
			var o *container.ListBlobsHierarchyOptions
			if !as(&o) {
				return errors.New("cannot set the start of an Azure listing")
			}
			o.StartFrom = ptr(prefix + token)
			return nil
		}
	}
}

// newService builds the blob service client from the first credentials
// of the chain (see the package comment); key is the account key when
// that is what they are.
func newService(endpoint, account string) (*service.Client, *azblob.SharedKeyCredential, error) {
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if cs != "" {
		p, err := parseConnectionString(cs)
		if err != nil {
			return nil, nil, fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING: %w", err)
		}
		if endpoint == "" {
			endpoint = p.endpoint
		}
		if p.sas != "" {
			c, err := service.NewClientWithNoCredential(strings.TrimSuffix(endpoint, "/")+"/?"+p.sas, nil)
			return c, nil, err
		}
		key, err := azblob.NewSharedKeyCredential(p.account, p.key)
		if err != nil {
			return nil, nil, fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING: %w", err)
		}
		c, err := service.NewClientWithSharedKeyCredential(endpoint, key, nil)
		return c, key, err
	}
	if account == "" {
		account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	}
	if endpoint == "" {
		if account == "" {
			return nil, nil, errors.New("no storage account: set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT, or storage_account= or endpoint= in the URL")
		}
		endpoint = "https://" + account + ".blob.core.windows.net/"
	}
	if k := os.Getenv("AZURE_STORAGE_KEY"); k != "" {
		if account == "" {
			return nil, nil, errors.New("AZURE_STORAGE_KEY without AZURE_STORAGE_ACCOUNT: name the account the key is of")
		}
		key, err := azblob.NewSharedKeyCredential(account, k)
		if err != nil {
			return nil, nil, fmt.Errorf("AZURE_STORAGE_KEY: %w", err)
		}
		c, err := service.NewClientWithSharedKeyCredential(endpoint, key, nil)
		return c, key, err
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("no Azure credentials (set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, or give the process a managed or workload identity): %w", err)
	}
	c, err := service.NewClient(endpoint, cred, nil)
	return c, nil, err
}

// connectionString is what the store uses of a connection string.
type connectionString struct{ account, key, endpoint, sas string }

// parseConnectionString reads Azure's "Name=value;..." form.
func parseConnectionString(s string) (connectionString, error) {
	var p connectionString
	proto, suffix := "https", "core.windows.net"
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "accountname":
			p.account = v
		case "accountkey":
			p.key = v
		case "blobendpoint":
			p.endpoint = v
		case "defaultendpointsprotocol":
			proto = v
		case "endpointsuffix":
			suffix = v
		case "sharedaccesssignature":
			p.sas = v
		}
	}
	if p.endpoint == "" {
		if p.account == "" {
			return p, errors.New("neither BlobEndpoint nor AccountName")
		}
		p.endpoint = proto + "://" + p.account + ".blob." + suffix
	}
	if p.sas == "" && (p.account == "" || p.key == "") {
		return p, errors.New("want AccountName and AccountKey, or SharedAccessSignature")
	}
	return p, nil
}

// probePrefix holds the object checkAccess writes and deletes at start.
const probePrefix = ".claimcheck-probe/"

// checkAccess reads the container's properties (it exists, the
// credentials work), then writes, lists and deletes a small object:
// Azure's data plane cannot say which permissions a caller has, and a
// role without delete (Storage Blob Data Reader, or a SAS without d)
// would otherwise show only when collection first deletes.
func (b *Bucket) checkAccess(ctx context.Context) error {
	_, err := b.container.GetProperties(ctx, nil)
	switch {
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return fmt.Errorf("container %s does not exist: create it (az storage container create --name %s) or fix the name", b.name, b.name)
	case bloberror.HasCode(err, bloberror.AuthenticationFailed, bloberror.InvalidAuthenticationInfo, bloberror.NoAuthenticationInformation):
		return fmt.Errorf("container %s: the credentials were refused: %w (check the account key or connection string)", b.name, err)
	case bloberror.HasCode(err, bloberror.AuthorizationFailure):
		// Azure's answer to a SAS or network rule that does not allow
		// the request; Azurite's to a wrong account key.
		return fmt.Errorf("container %s: the credentials were refused: %w (check the account key, connection string or SAS, and the account's network rules)", b.name, err)
	case bloberror.HasCode(err, bloberror.AuthorizationPermissionMismatch):
		return fmt.Errorf("container %s: %w: grant Storage Blob Data Contributor on the container to the identity", b.name, err)
	case err != nil:
		return fmt.Errorf("container %s: %w", b.name, err)
	}
	key := b.prefix + probePrefix + strings.ToLower(rand.Text())
	bb := b.container.NewBlockBlobClient(key)
	step := func(what string, err error) error {
		if err == nil {
			return nil
		}
		if bloberror.HasCode(err, bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationFailure) {
			return fmt.Errorf("container %s: the credentials may not %s blobs: grant Storage Blob Data Contributor on the container (or a SAS with racwdl): %w", b.name, what, err)
		}
		return fmt.Errorf("container %s: %s a probe blob: %w", b.name, what, err)
	}
	if _, err := bb.UploadBuffer(ctx, nil, nil); step("write", err) != nil {
		return step("write", err)
	}
	pager := b.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &key, MaxResults: ptr(int32(1))})
	if _, err := pager.NextPage(ctx); step("list", err) != nil {
		_, _ = bb.Delete(ctx, nil)
		return step("list", err)
	}
	if _, err := bb.Delete(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return step("delete", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// blockBlob is the client of key's block blob, under the URL's prefix.
func (b *Bucket) blockBlob(key string) *blockblob.Client {
	return b.container.NewBlockBlobClient(b.prefix + key)
}

// httpStatus is the HTTP status of a blob service error, 0 if none: it
// lets blob.FaultOf tell a 500 about one blob from an outage (ADR 0255).
func httpStatus(err error) int {
	if respErr, ok := errors.AsType[*azcore.ResponseError](err); ok {
		return respErr.StatusCode
	}
	return 0
}
