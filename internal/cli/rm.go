package cli

import "github.com/spf13/cobra"

type rmCmd struct{ client clientFlags }

func newRmCmd(env Env) *cobra.Command {
	r := &rmCmd{}
	cmd := &cobra.Command{
		Use:   "rm REF|@REFFILE|-",
		Short: "Delete a claim now (later redeems answer gone: deleted)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, c, err := r.client.claim(args[0], env.Stdin)
			if err != nil {
				return err
			}
			return c.Delete(cmd.Context(), ref)
		},
	}
	r.client.register(cmd, env)
	return cmd
}
