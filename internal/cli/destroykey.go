package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

type destroyKeyCmd struct {
	client  clientFlags
	confirm string
}

// newDestroyKeyCmd is `claimcheck destroy-key NS --confirm NS`:
// crypto-shredding of an encrypted namespace through a running server
// (ADR 0066).
func newDestroyKeyCmd(env Env) *cobra.Command {
	d := &destroyKeyCmd{}
	cmd := &cobra.Command{
		Use:   "destroy-key NAMESPACE --confirm NAMESPACE",
		Short: "Crypto-shredding: destroy an encrypted namespace's data key",
		Long: `Destroy the data key of a namespace with encryption: aes-256-gcm. Every
object encrypted under it becomes unreadable for good: redeems answer gone
with reason key_destroyed, and the objects are collected as their claims
end. There is no undo; the namespace name must be repeated with --confirm.
Refused (exit 1, "held") while the namespace or one of its claims is on legal
hold. The next put to the namespace creates a new key. Needs an admin key.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns := args[0]
			if d.confirm != ns {
				return usageError{fmt.Errorf("destroying the data key of %s cannot be undone: repeat the namespace with --confirm %s", ns, ns)}
			}
			c, err := d.client.client()
			if err != nil {
				return err
			}
			if err := c.DestroyNamespaceKey(cmd.Context(), ns); err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "destroyed the data key of %s: its encrypted claims are unreadable\n", ns)
			return nil
		},
	}
	d.client.register(cmd, env)
	cmd.Flags().StringVar(&d.confirm, "confirm", "", "the namespace again, to confirm")
	return cmd
}
