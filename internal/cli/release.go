package cli

import "github.com/spf13/cobra"

type releaseCmd struct {
	client   clientFlags
	consumer string
}

func newReleaseCmd(env Env) *cobra.Command {
	r := &releaseCmd{}
	cmd := &cobra.Command{
		Use:   "release REF|@REFFILE|- [--consumer NAME]",
		Short: "Acknowledge a claim: this consumer is done with it",
		Long: `Record that a consumer has finished with the claim. Releasing twice under
the same consumer name changes nothing. When the claim's expected number of
consumers have released it, it is deleted after the namespace's
retention_after_read window.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, c, err := r.client.claim(args[0], env.Stdin)
			if err != nil {
				return err
			}
			return c.Release(cmd.Context(), ref, r.consumer)
		},
	}
	r.client.register(cmd, env)
	cmd.Flags().StringVar(&r.consumer, "consumer", "", "consumer name (releases are counted once per name)")
	return cmd
}
