package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// keysCmd is `claimcheck keys create|ls|revoke`. It works on the store
// directly (the same --config/--data as serve, no server needed), so the
// first admin key can be made before anything can authenticate. Keys of
// a running server's tenant can also be managed over HTTP with an admin
// key (POST/GET /v1/keys, DELETE /v1/keys/{id}).
type keysCmd struct {
	store  storeFlags
	asJSON bool
}

func newKeysCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys create|ls|revoke",
		Short: "Manage API keys (offline, on the store: the same --config/--data as serve)",
		Long: `Create, list and revoke API keys. These commands work on the store itself,
like gc and fsck, so an operator can bootstrap the first admin key before the
server requires keys (auth: true or serve --auth).

A key belongs to a tenant, has one role and may be limited to one namespace:
  producer  put, stat, release, delete
  consumer  redeem, stat, release
  admin     everything in its tenant, including keys (over HTTP: /v1/keys)
The token is printed once and stored only as a hash: keep it. Creating and
revoking are key_created and key_revoked events of the audit trail, with
the actor cli:$USER (read them with claimcheck events --tenant T).`,
	}
	cmd.AddCommand(newKeysCreateCmd(env), newKeysLsCmd(env), newKeysRevokeCmd(env))
	return cmd
}

// open opens the store offline and returns the key service and config.
func (k *keysCmd) open(ctx context.Context, env Env) (*auth.Service, *engine.Store, fileConfig, error) {
	fc, err := k.store.load(env)
	if err != nil {
		return nil, nil, fc, err
	}
	store, err := k.store.openOffline(ctx, env)
	if err != nil {
		return nil, nil, fc, err
	}
	return auth.New(store.APIKeyStore(), nil), store, fc, nil
}

// offlineActor is the actor the audit trail records for the commands that
// change the store directly, without an API key (key_created and
// key_revoked events): "cli", with the operating system user when $USER
// names one ("cli:alice"), so the trail says which operator it was.
func offlineActor(env Env) string {
	if u := env.Getenv("USER"); u != "" {
		return "cli:" + u
	}
	return "cli"
}

func (k *keysCmd) register(cmd *cobra.Command) {
	k.store.register(cmd)
	cmd.Flags().BoolVar(&k.asJSON, "json", false, "print JSON")
}

func newKeysCreateCmd(env Env) *cobra.Command {
	k := &keysCmd{}
	var tenant, role, ns, name string
	cmd := &cobra.Command{
		Use:   "create --role producer|consumer|admin [--tenant T] [--ns NS] [--name LABEL]",
		Short: "Create an API key and print its token (shown once)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := auth.ParseRole(role)
			if err != nil {
				return usageError{fmt.Errorf("--role: %w", err)}
			}
			svc, store, fc, err := k.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			if !fc.HasTenant(tenant) {
				return fmt.Errorf("%w: tenant %q is not declared in the config's tenants section", claimcheck.ErrInvalidArgument, tenant)
			}
			if ns != "" {
				pol, err := store.Policy(cmd.Context(), ns)
				if err != nil {
					return fmt.Errorf("--ns: %w", err)
				}
				if pol.Tenant != tenant {
					return fmt.Errorf("%w: namespace %s belongs to tenant %s, not %s", claimcheck.ErrInvalidArgument, ns, pol.Tenant, tenant)
				}
			}
			ctx := claimcheck.WithActor(cmd.Context(), offlineActor(env))
			key, token, err := svc.Create(ctx, auth.CreateParams{Tenant: tenant, Role: r, Namespace: ns, Name: name})
			if err != nil {
				return err
			}
			if k.asJSON {
				return json.NewEncoder(env.Stdout).Encode(api.CreatedKey{KeyInfo: server.KeyInfo(key), Token: token})
			}
			fmt.Fprintf(env.Stderr, "created key %s (tenant %s, role %s%s); the token is shown only now:\n", key.ID, key.Tenant, key.Role, scope(key.Namespace))
			fmt.Fprintln(env.Stdout, token)
			return nil
		},
	}
	k.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", claimcheck.DefaultTenant, "tenant of the key")
	cmd.Flags().StringVar(&role, "role", "", "producer, consumer or admin (required)")
	cmd.Flags().StringVar(&ns, "ns", "", "limit the key to this namespace")
	cmd.Flags().StringVar(&name, "name", "", "a label for the key")
	return cmd
}

func scope(ns string) string {
	if ns == "" {
		return ""
	}
	return ", namespace " + ns
}

func newKeysLsCmd(env Env) *cobra.Command {
	k := &keysCmd{}
	var tenant string
	cmd := &cobra.Command{
		Use:   "ls [--tenant T] [--json]",
		Short: "List API keys (never their tokens), revoked ones included",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, store, _, err := k.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			keys, err := svc.List(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			if k.asJSON {
				out := api.KeyList{Keys: make([]api.KeyInfo, len(keys))}
				for i, key := range keys {
					out.Keys[i] = server.KeyInfo(key)
				}
				return json.NewEncoder(env.Stdout).Encode(out)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tROLE\tNAMESPACE\tNAME\tCREATED\tREVOKED")
			for _, key := range keys {
				revoked := "-"
				if !key.RevokedAt.IsZero() {
					revoked = key.RevokedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", key.ID, key.Tenant, key.Role, dash(key.Namespace), dash(key.Name),
					key.CreatedAt.Format(time.RFC3339), revoked)
			}
			return tw.Flush()
		},
	}
	k.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's keys (default: all)")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newKeysRevokeCmd(env Env) *cobra.Command {
	k := &keysCmd{}
	cmd := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke an API key; servers refuse it from their next request on",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, store, _, err := k.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			key, err := svc.Revoke(claimcheck.WithActor(cmd.Context(), offlineActor(env)), args[0], "")
			if err != nil {
				return err
			}
			if k.asJSON {
				return json.NewEncoder(env.Stdout).Encode(server.KeyInfo(key))
			}
			fmt.Fprintf(env.Stdout, "revoked key %s (tenant %s, role %s) at %s\n", key.ID, key.Tenant, key.Role, key.RevokedAt.Format(time.RFC3339))
			return nil
		},
	}
	k.register(cmd)
	return cmd
}
