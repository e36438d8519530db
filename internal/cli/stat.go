package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"
)

type statCmd struct{ client clientFlags }

func newStatCmd(env Env) *cobra.Command {
	s := &statCmd{}
	cmd := &cobra.Command{
		Use:   "stat REF|@REFFILE|-",
		Short: "Show a claim's state, deadlines, reads and releases (JSON)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, c, err := s.client.claim(args[0], env.Stdin)
			if err != nil {
				return err
			}
			info, err := c.Stat(cmd.Context(), ref)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		},
	}
	s.client.register(cmd, env)
	return cmd
}
