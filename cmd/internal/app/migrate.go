package app

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
)

// runMigrate is `memocart migrate`: apply pending migrations, then list all.
func runMigrate(ctx context.Context, e Env, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	status := fs.Bool("status", false, "only list migrations and when they were applied")
	fs.Usage = func() {
		fmt.Fprintln(e.Stderr, "Usage: memocart migrate [--status]\n\nApplies pending migrations to the database of MEMOCART_DATABASE_URL (or the dev SQLite file).\nSafe to run from several replicas at once.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := OpenStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	if !*status {
		applied, err := st.Migrate(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stderr, "applied %d migration(s)\n", len(applied))
	}
	ms, err := st.Migrations(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
	for _, m := range ms {
		at := "pending"
		if m.AppliedAt != nil {
			at = m.AppliedAt.Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", m.Version, m.Name, at)
	}
	return tw.Flush()
}
