package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type holdCmd struct {
	client clientFlags
	ns     string
	reason string
}

// newHoldCmd is `claimcheck hold set|clear|show`: legal holds on a claim
// or a namespace, through a running server (ADR 0065).
func newHoldCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hold",
		Short: "Legal hold: keep a claim or a whole namespace from being deleted",
		Long: `A claim on legal hold, or any claim of a namespace on hold, is never deleted:
not by expiry, release, delete-after-read, rm or garbage collection. It can
still be read. When the last hold is lifted the claim gets its deadline back
and is deleted at once if that has passed. Holds are an admin operation;
every set and lift is a hold_set or hold_cleared event of the audit trail
(claimcheck events REF, claimcheck events --ns NS).`,
	}
	target := func(h *holdCmd, args []string) (claimcheck.Ref, bool, error) {
		switch {
		case h.ns != "" && len(args) == 0:
			return claimcheck.Ref{}, true, nil
		case h.ns == "" && len(args) == 1:
			ref, err := readRef(args[0], env.Stdin)
			return ref, false, err
		}
		return claimcheck.Ref{}, false, usageError{fmt.Errorf("give either a claim (REF, @REFFILE, - or an id) or --ns NAMESPACE")}
	}
	set := &holdCmd{}
	setCmd := &cobra.Command{
		Use:   "set (REF|@REFFILE|-|ID | --ns NS) [--reason TEXT]",
		Short: "Put a claim or a namespace on legal hold",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, isNS, err := target(set, args)
			if err != nil {
				return err
			}
			c, err := set.client.client()
			if err != nil {
				return err
			}
			if isNS {
				return c.SetNamespaceHold(cmd.Context(), set.ns, set.reason)
			}
			return c.SetHold(cmd.Context(), ref, set.reason)
		},
	}
	set.client.register(setCmd, env)
	setCmd.Flags().StringVar(&set.ns, "ns", "", "hold every claim of this namespace, present and future")
	setCmd.Flags().StringVar(&set.reason, "reason", "", "why (a case or ticket number), shown by stat")

	clear := &holdCmd{}
	clearCmd := &cobra.Command{
		Use:   "clear (REF|@REFFILE|-|ID | --ns NS)",
		Short: "Lift a legal hold; overdue claims are deleted at once",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, isNS, err := target(clear, args)
			if err != nil {
				return err
			}
			c, err := clear.client.client()
			if err != nil {
				return err
			}
			if isNS {
				return c.ClearNamespaceHold(cmd.Context(), clear.ns)
			}
			return c.ClearHold(cmd.Context(), ref)
		},
	}
	clear.client.register(clearCmd, env)
	clearCmd.Flags().StringVar(&clear.ns, "ns", "", "lift the hold of this namespace")

	show := &holdCmd{}
	showCmd := &cobra.Command{
		Use:   "show --ns NS",
		Short: "Show a namespace's hold (JSON; a claim's holds are in stat)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if show.ns == "" {
				return usageError{fmt.Errorf("--ns is required")}
			}
			c, err := show.client.client()
			if err != nil {
				return err
			}
			h, err := c.NamespaceHold(cmd.Context(), show.ns)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"namespace": show.ns, "hold": h})
		},
	}
	show.client.register(showCmd, env)
	showCmd.Flags().StringVar(&show.ns, "ns", "", "namespace")

	cmd.AddCommand(setCmd, clearCmd, showCmd)
	return cmd
}
