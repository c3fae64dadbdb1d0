package app

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/memocart/memocart/models/sqlstore"
)

// subcommand is one verb of an operator's command (`memocart keys create`).
type subcommand struct {
	name string
	run  func(ctx context.Context, e Env, args []string) error
}

// runSubcommands runs the subcommand args[0] names, with the rest of args.
// No subcommand, or -h, prints usage (and no subcommand is an error naming
// them); an unknown one prints usage and names it.
func runSubcommands(ctx context.Context, e Env, command, usage string, args []string, subs ...subcommand) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.Stderr, usage)
		if len(args) == 0 {
			names := make([]string, len(subs))
			for i, s := range subs {
				names[i] = s.name
			}
			list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
			return fmt.Errorf("%s needs a subcommand: %s", command, list)
		}
		return flag.ErrHelp
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintln(e.Stderr, usage)
	return fmt.Errorf("unknown %s subcommand %q", command, args[0])
}

// onOperatorStore runs fn on the store of the service, opened for it
// (openOperatorStore) and closed after.
func onOperatorStore(fn func(ctx context.Context, e Env, st *sqlstore.Store, args []string) error) func(context.Context, Env, []string) error {
	return func(ctx context.Context, e Env, args []string) error {
		st, err := openOperatorStore(ctx, e)
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(ctx, e, st, args)
	}
}
