package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type nsCmd struct {
	client clientFlags
	asJSON bool
}

// newNsCmd is `claimcheck ns ls|show`: namespace limits and usage, read
// from a running server like the other client commands.
func newNsCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ns",
		Short: "Show namespaces: policy, quota limits, usage, reservations and claim counts",
	}
	ls := &nsCmd{}
	lsCmd := &cobra.Command{
		Use:   "ls [--json]",
		Short: "List every namespace with its quota limits and usage",
		Long: `List the namespaces the server knows (configured ones and any that hold
claims) with their quota: bytes used by active claims, bytes reserved by
pending ones (puts in flight, unconfirmed uploads), claim counts, and the
limits (- means unlimited). A retired namespace is no longer configured but
still holds claims.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := ls.client.client()
			if err != nil {
				return err
			}
			list, err := c.Namespaces(cmd.Context())
			if err != nil {
				return err
			}
			if ls.asJSON {
				return json.NewEncoder(env.Stdout).Encode(list)
			}
			return printNamespaces(env.Stdout, list)
		},
	}
	ls.client.register(lsCmd, env)
	lsCmd.Flags().BoolVar(&ls.asJSON, "json", false, "print JSON")

	show := &nsCmd{}
	showCmd := &cobra.Command{
		Use:   "show NS",
		Short: "Show one namespace: policy, quota limits and usage (JSON)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := claimcheck.ValidateNamespace(args[0]); err != nil {
				return usageError{err}
			}
			c, err := show.client.client()
			if err != nil {
				return err
			}
			info, err := c.Namespace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		},
	}
	show.client.register(showCmd, env)
	cmd.AddCommand(lsCmd, showCmd)
	return cmd
}

func printNamespaces(w io.Writer, list []claimcheck.NamespaceInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tTENANT\tUSED\tRESERVED\tBYTES LIMIT\tACTIVE\tPENDING\tCLAIMS LIMIT")
	for _, n := range list {
		tenant := n.Policy.Tenant
		if n.Retired {
			tenant = "(retired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", n.Name, tenant,
			humanize.IBytes(uint64(n.Usage.UsedBytes)), humanize.IBytes(uint64(n.Usage.ReservedBytes)), byteLimit(n.Limits.Bytes),
			n.Usage.ActiveClaims, n.Usage.PendingClaims, countLimit(n.Limits.Claims))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Tenant totals: a put must fit its namespace's quota and its
	// tenant's, summed over all the tenant's namespaces.
	seen := map[string]bool{}
	var tenants []claimcheck.TenantInfo
	for _, n := range list {
		if n.Tenant != nil && !seen[n.Tenant.Name] {
			seen[n.Tenant.Name] = true
			tenants = append(tenants, *n.Tenant)
		}
	}
	if len(tenants) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "TENANT	NAMESPACES	USED	RESERVED	BYTES LIMIT	ACTIVE	PENDING	CLAIMS LIMIT")
	for _, t := range tenants {
		fmt.Fprintf(tw, "%s	%d	%s	%s	%s	%d	%d	%s\n", t.Name, t.Namespaces,
			humanize.IBytes(uint64(t.Usage.UsedBytes)), humanize.IBytes(uint64(t.Usage.ReservedBytes)), byteLimit(t.Limits.Bytes),
			t.Usage.ActiveClaims, t.Usage.PendingClaims, countLimit(t.Limits.Claims))
	}
	return tw.Flush()
}

func byteLimit(s claimcheck.Size) string {
	if s <= 0 {
		return "-"
	}
	return humanize.IBytes(uint64(s))
}

func countLimit(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}
