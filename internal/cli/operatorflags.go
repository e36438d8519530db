package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
)

// operatorFlags are the flags of an operator command that works either
// offline, on the store itself (--config/--data, like serve, fsck and gc),
// or remotely, through a running server's admin API (--server/--api-key,
// like the client commands). Offline needs access to the database and
// the bucket; remote needs an admin key and sees only its tenant.
//
// Which one: --server or --api-key on the command line means remote,
// --config or --data means offline, both is a usage error. With neither,
// a $CLAIMCHECK_SERVER in the environment means remote, and otherwise the
// command works offline on the store serve would open (./data by
// default), as it did before it had a remote mode.
type operatorFlags struct {
	store  storeFlags
	client clientFlags
	cmd    *cobra.Command
}

func (f *operatorFlags) register(cmd *cobra.Command, env Env) {
	f.cmd = cmd
	f.store.register(cmd)
	f.client.register(cmd, env)
}

// remote reports whether the command talks to a server.
func (f *operatorFlags) remote(env Env) (bool, error) {
	changed := func(names ...string) bool {
		for _, n := range names {
			if f.cmd.Flags().Changed(n) {
				return true
			}
		}
		return false
	}
	remote, offline := changed("server", "api-key"), changed("config", "data")
	switch {
	case remote && offline:
		return false, usageError{errors.New("--server/--api-key talk to a running server, --config/--data open the store directly: give one or the other")}
	case remote:
		return true, nil
	case offline:
		return false, nil
	}
	return env.Getenv("CLAIMCHECK_SERVER") != "", nil
}

// operatorTarget is what an operator command works on: a client of a
// running server, or the store opened offline.
type operatorTarget struct {
	client *client.Client // remote
	store  *engine.Store  // offline
}

// Close closes the store opened offline.
func (t operatorTarget) Close() error {
	if t.store != nil {
		return t.store.Close()
	}
	return nil
}

// open makes the client, or opens the store, as the flags say.
func (f *operatorFlags) open(ctx context.Context, env Env) (operatorTarget, error) {
	remote, err := f.remote(env)
	if err != nil {
		return operatorTarget{}, err
	}
	// Say which, on stderr (stdout stays the command's output): the
	// same command line means an offline store or a server depending on
	// $CLAIMCHECK_SERVER, and the two can hold different things.
	name := f.cmd.CommandPath()
	if remote {
		c, err := f.client.client()
		if err == nil {
			fmt.Fprintf(env.Stderr, "%s: through the server at %s (--server)\n", name, f.client.server)
		}
		return operatorTarget{client: c}, err
	}
	store, err := f.store.openOffline(ctx, env)
	if err == nil {
		fmt.Fprintf(env.Stderr, "%s: offline, on the store of %s (--config/--data; give --server URL to go through a server)\n", name, f.store.describe())
	}
	return operatorTarget{store: store}, err
}

// describe names the store the flags open, for the mode notice.
func (f *storeFlags) describe() string {
	switch {
	case f.config != "" && f.data != "":
		return "--config " + f.config + " with --data " + f.data
	case f.config != "":
		return "--config " + f.config
	case f.data != "":
		return "--data " + f.data
	}
	return "the default data directory " + engine.DefaultDataDir
}

// deadLetters is the target's dead-letter queue: both sides implement
// claimcheck.Admin, so the command is the same code either way.
func (t operatorTarget) deadLetters() claimcheck.Admin {
	if t.client != nil {
		return t.client
	}
	return t.store
}
