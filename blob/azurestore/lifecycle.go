package azurestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage"

	"github.com/claimcheck/claimcheck/blob"
)

// lifecycleRole is what an identity needs for the safety net on Azure.
const lifecycleRole = "Storage Account Contributor on the storage account, or a custom role with " +
	"Microsoft.Storage/storageAccounts/managementPolicies/read and Microsoft.Storage/storageAccounts/managementPolicies/write"

// errNoManagement is LifecycleRules' answer when the URL names no
// storage account resource: the data plane has no lifecycle rules.
var errNoManagement = fmt.Errorf("%w: Azure lifecycle management policies belong to the storage account's management API; "+
	"set account_resource_id=/subscriptions/SUB/resourceGroups/GROUP/providers/Microsoft.Storage/storageAccounts/ACCOUNT "+
	"in the storage URL and grant the identity %s", blob.ErrNoLifecycle, lifecycleRole)

// rulePrefix starts the name of every lifecycle rule claimcheck writes.
// Azure rule names are alphanumeric, and the account has one policy for
// all its containers, so a name is rulePrefix, then 16 hex digits of the
// store's scope (container and URL prefix: two stores on one account do
// not take each other's rules), then the rule's ID in hex (ADR 0230).
const rulePrefix = "claimcheck"

// maxRuleName is Azure's limit on a rule name.
const maxRuleName = 256

// policies is the storage account's lifecycle management policy, read
// and written through Azure Resource Manager.
type policies struct {
	client         *armstorage.ManagementPoliciesClient
	group, account string
	container      string
	prefix         string // the URL's prefix
	scope          string // rulePrefix and the store's scope: the start of our rules' names
}

// newPolicies is the management client of the account resource id
// (/subscriptions/…/storageAccounts/ACCOUNT) for the store's container
// and prefix.
func newPolicies(resourceID string, cred azcore.TokenCredential, opts *arm.ClientOptions, container, prefix string) (*policies, error) {
	id, err := arm.ParseResourceID(resourceID)
	if err != nil || !strings.EqualFold(id.ResourceType.String(), "Microsoft.Storage/storageAccounts") || id.ResourceGroupName == "" {
		return nil, fmt.Errorf("account_resource_id %q: want /subscriptions/SUB/resourceGroups/GROUP/providers/Microsoft.Storage/storageAccounts/ACCOUNT", resourceID)
	}
	c, err := armstorage.NewManagementPoliciesClient(id.SubscriptionID, cred, opts)
	if err != nil {
		return nil, fmt.Errorf("account_resource_id: %w", err)
	}
	sum := sha256.Sum256([]byte(container + "/" + prefix))
	return &policies{
		client: c, group: id.ResourceGroupName, account: id.Name, container: container, prefix: prefix,
		scope: rulePrefix + hex.EncodeToString(sum[:8]),
	}, nil
}

// get is the account's policy rules; none when it has no policy.
func (p *policies) get(ctx context.Context) ([]*armstorage.ManagementPolicyRule, error) {
	r, err := p.client.Get(ctx, p.group, p.account, armstorage.ManagementPolicyNameDefault, nil)
	if respErr, ok := errors.AsType[*azcore.ResponseError](err); ok && respErr.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, p.explain("read", err)
	}
	if r.Properties == nil || r.Properties.Policy == nil {
		return nil, nil
	}
	return r.Properties.Policy.Rules, nil
}

// explain names the role to grant when the management API refuses.
func (p *policies) explain(what string, err error) error {
	if respErr, ok := errors.AsType[*azcore.ResponseError](err); ok && (respErr.StatusCode == http.StatusForbidden || respErr.StatusCode == http.StatusUnauthorized) {
		return fmt.Errorf("blob: %s the lifecycle management policy of storage account %s: %w (grant the identity %s)", what, p.account, err, lifecycleRole)
	}
	return fmt.Errorf("blob: %s the lifecycle management policy of storage account %s: %w", what, p.account, err)
}

// LifecycleRules implements blob.Lifecycler: the enabled rules of the
// account's policy that delete block blobs of the store's container. A
// rule named by this store is the rule of its ID; any other gets the ID
// "azure:NAME" and one entry per prefix reaching the store's keys.
// Conditions other than age and prefix (blob index tags) make it
// Filtered.
func (b *Bucket) LifecycleRules(ctx context.Context) ([]blob.LifecycleRule, error) {
	if b.policies == nil {
		return nil, errNoManagement
	}
	rules, err := b.policies.get(ctx)
	if err != nil {
		return nil, err
	}
	return b.policies.fromAzure(rules), nil
}

func (p *policies) fromAzure(in []*armstorage.ManagementPolicyRule) []blob.LifecycleRule {
	out := []blob.LifecycleRule{}
	for _, r := range in {
		if r == nil || r.Name == nil || (r.Enabled != nil && !*r.Enabled) || r.Definition == nil {
			continue
		}
		days := deleteDays(r.Definition.Actions)
		f := r.Definition.Filters
		if days == 0 || (f != nil && !slices.ContainsFunc(f.BlobTypes, func(t *string) bool { return t != nil && strings.EqualFold(*t, "blockBlob") })) {
			continue // deletes none of our (block) blobs
		}
		filtered := f != nil && len(f.BlobIndexMatch) > 0
		var prefixes []string
		if f == nil || len(f.PrefixMatch) == 0 {
			prefixes = []string{""}
		}
		if f != nil {
			for _, m := range f.PrefixMatch {
				// A prefix match is CONTAINER/BLOBPREFIX; a bare name
				// prefix matches containers by their names' start.
				c, rest, ok := strings.Cut(deref(m), "/")
				switch {
				case ok && c == p.container:
					prefixes = append(prefixes, rest)
				case !ok && strings.HasPrefix(p.container, c):
					prefixes = append(prefixes, "")
				}
			}
		}
		if id, ours := p.ruleID(*r.Name); ours && len(prefixes) == 1 && strings.HasPrefix(prefixes[0], p.prefix) {
			out = append(out, blob.LifecycleRule{ID: id, Prefix: prefixes[0][len(p.prefix):], ExpireDays: days, Filtered: filtered})
			continue
		}
		for _, pre := range prefixes {
			if rel, ok := relative(pre, p.prefix); ok {
				out = append(out, blob.LifecycleRule{ID: "azure:" + *r.Name, Prefix: rel, ExpireDays: days, Filtered: filtered})
			}
		}
	}
	return out
}

// deleteDays is the age in days after which a rule deletes a base blob,
// 0 when it deletes none. "Greater than N days" deletes after N days;
// the shortest of the rule's conditions counts, the strictest reading
// for a safety check.
func deleteDays(a *armstorage.ManagementPolicyAction) int {
	if a == nil || a.BaseBlob == nil || a.BaseBlob.Delete == nil {
		return 0
	}
	d := a.BaseBlob.Delete
	days := 0
	for _, v := range []*float32{d.DaysAfterModificationGreaterThan, d.DaysAfterCreationGreaterThan, d.DaysAfterLastAccessTimeGreaterThan, d.DaysAfterLastTierChangeGreaterThan} {
		if v != nil && (days == 0 || int(*v) < days) {
			days = max(int(*v), 1)
		}
	}
	return days
}

// relative is the prefix pre of the container seen from under the
// store's prefix: the part past it, "" when pre covers all of it, and
// false when pre reaches none of the store's keys.
func relative(pre, prefix string) (string, bool) {
	switch {
	case strings.HasPrefix(pre, prefix):
		return pre[len(prefix):], true
	case strings.HasPrefix(prefix, pre):
		return "", true
	}
	return "", false
}

// ruleName is the Azure name of this store's rule id.
func (p *policies) ruleName(id string) string { return p.scope + hex.EncodeToString([]byte(id)) }

// ruleID is the ID of a rule name of this store's, false for any other.
func (p *policies) ruleID(name string) (string, bool) {
	h, ok := strings.CutPrefix(name, p.scope)
	if !ok {
		return "", false
	}
	id, err := hex.DecodeString(h)
	return string(id), err == nil && len(id) > 0
}

// PutLifecycleRules implements blob.Lifecycler. The account has one
// policy for all its containers, so only this store's rules are
// replaced: every rule it did not name (of other containers, other
// stores, tiering, or read here as "azure:NAME") is written back exactly
// as the account has it, whether or not rules passes it back. Azure has
// no action for abandoned uploads (it discards uncommitted blocks after
// a week on its own): a rule with AbortMultipartDays and no expiry is
// refused, naming that. No rules left deletes the policy, since Azure
// refuses one without rules.
func (b *Bucket) PutLifecycleRules(ctx context.Context, rules []blob.LifecycleRule) error {
	p := b.policies
	if p == nil {
		return errNoManagement
	}
	var ours []*armstorage.ManagementPolicyRule
	for _, r := range rules {
		if strings.HasPrefix(r.ID, "azure:") {
			continue // kept from the account's policy below
		}
		if r.ID == "" {
			return fmt.Errorf("blob: put lifecycle rule of prefix %q: a rule needs an ID", r.Prefix)
		}
		if r.Filtered {
			return fmt.Errorf("blob: put lifecycle rule %q: filters other than a prefix cannot be written back; remove the rule or manage the account's policy by hand", r.ID)
		}
		if r.ExpireDays == 0 {
			if r.AbortMultipartDays > 0 {
				return fmt.Errorf("blob: put lifecycle rule %q: Azure lifecycle policies cannot abort uploads (the service discards uncommitted blocks after seven days)", r.ID)
			}
			continue
		}
		name := p.ruleName(r.ID)
		if len(name) > maxRuleName {
			return fmt.Errorf("blob: put lifecycle rule %q: its Azure name would be longer than %d characters; use a shorter namespace name", r.ID, maxRuleName)
		}
		ours = append(ours, &armstorage.ManagementPolicyRule{
			Name: &name, Enabled: ptr(true), Type: ptr(armstorage.RuleTypeLifecycle),
			Definition: &armstorage.ManagementPolicyDefinition{
				Filters: &armstorage.ManagementPolicyFilter{
					BlobTypes:   []*string{ptr("blockBlob")},
					PrefixMatch: []*string{ptr(p.container + "/" + p.prefix + r.Prefix)},
				},
				Actions: &armstorage.ManagementPolicyAction{BaseBlob: &armstorage.ManagementPolicyBaseBlob{
					Delete: &armstorage.DateAfterModification{DaysAfterModificationGreaterThan: ptr(float32(r.ExpireDays))},
				}},
			},
		})
	}
	have, err := p.get(ctx)
	if err != nil {
		return err
	}
	var next []*armstorage.ManagementPolicyRule
	for _, r := range have {
		if r != nil && r.Name != nil && strings.HasPrefix(*r.Name, p.scope) {
			continue
		}
		next = append(next, r)
	}
	next = append(next, ours...)
	if len(next) == 0 {
		if len(have) == 0 {
			return nil
		}
		if _, err := p.client.Delete(ctx, p.group, p.account, armstorage.ManagementPolicyNameDefault, nil); err != nil {
			return p.explain("delete", err)
		}
		return nil
	}
	_, err = p.client.CreateOrUpdate(ctx, p.group, p.account, armstorage.ManagementPolicyNameDefault, armstorage.ManagementPolicy{
		Properties: &armstorage.ManagementPolicyProperties{Policy: &armstorage.ManagementPolicySchema{Rules: next}},
	}, nil)
	if err != nil {
		return p.explain("write", err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
