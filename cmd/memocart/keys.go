package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

const keysUsage = `Usage:
  memocart keys create --account NAME --mode test|live --tier free|pro|enterprise [--per-minute N]
      Creates a key and prints it, once, on stdout (nothing else goes to stdout).
  memocart keys list [--account NAME]
  memocart keys revoke KEY_ID

Works on the database of MEMOCART_DATABASE_URL, or the same SQLite file memocart dev uses
(also while dev is running).`

// runKeys is `memocart keys`.
func runKeys(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.stderr, keysUsage)
		if len(args) == 0 {
			return errors.New("keys needs a subcommand: create, list or revoke")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "create":
		return keysCreate(ctx, e, args[1:])
	case "list":
		return keysList(ctx, e, args[1:])
	case "revoke":
		return keysRevoke(ctx, e, args[1:])
	}
	fmt.Fprintln(e.stderr, keysUsage)
	return fmt.Errorf("unknown keys subcommand %q", args[0])
}

func keysFlagSet(e env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("keys "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprintln(e.stderr, keysUsage); fs.PrintDefaults() }
	return fs
}

// openMigratedStore opens the database and brings its schema up to date, so
// keys can be created on a fresh dev database before dev first ran.
func openMigratedStore(ctx context.Context, e env) (*sqlstore.Store, error) {
	st, err := openStore(ctx, e)
	if err != nil {
		return nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func keysCreate(ctx context.Context, e env, args []string) error {
	fs := keysFlagSet(e, "create")
	account := fs.String("account", "", "account name (created if new)")
	mode := fs.String("mode", "", "test or live")
	tier := fs.String("tier", "", "free, pro or enterprise")
	perMinute := fs.Int("per-minute", 0, "enterprise only: the key's requests per minute")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var errs []error
	if *account == "" {
		errs = append(errs, errors.New("--account is required"))
	}
	if !models.Mode(*mode).Valid() {
		errs = append(errs, errors.New("--mode must be test or live"))
	}
	if !models.Tier(*tier).Valid() {
		errs = append(errs, errors.New("--tier must be free, pro or enterprise"))
	}
	switch {
	case *perMinute < 0:
		errs = append(errs, errors.New("--per-minute must not be negative"))
	case *perMinute > models.MaxPerMinute:
		errs = append(errs, fmt.Errorf("--per-minute must be at most %d", models.MaxPerMinute))
	case models.Tier(*tier) == models.TierEnterprise && *perMinute == 0:
		errs = append(errs, errors.New("--per-minute is required for enterprise keys"))
	case models.Tier(*tier) != models.TierEnterprise && *perMinute != 0:
		errs = append(errs, errors.New("--per-minute applies to enterprise keys only"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	st, err := openMigratedStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	acct, err := st.EnsureAccount(ctx, *account, now)
	if err != nil {
		return err
	}
	secret, err := models.NewAPIKeySecret(e.cfg.KeyPrefix, models.Mode(*mode), rand.Reader)
	if err != nil {
		return err
	}
	k, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.Mode(*mode), Tier: models.Tier(*tier), PerMinute: *perMinute, CreatedAt: now})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "created key %s for account %s (%s, %s, %d requests/minute); it is shown once:\n", k.ID, acct.Name, k.Mode, k.Tier, k.RateLimit())
	_, err = fmt.Fprintln(e.stdout, secret)
	return err
}

func keysList(ctx context.Context, e env, args []string) error {
	fs := keysFlagSet(e, "list")
	account := fs.String("account", "", "only this account's keys")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := openMigratedStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.ListAPIKeys(ctx, *account)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACCOUNT\tMODE\tTIER\tPER_MINUTE\tKEY\tCREATED\tREVOKED")
	for _, k := range keys {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s…%s\t%s\t%s\n", k.ID, k.AccountName, k.Mode, k.Tier, k.RateLimit(),
			k.DisplayPrefix, k.Last4, k.CreatedAt.Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, e env, args []string) error {
	fs := keysFlagSet(e, "revoke")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("keys revoke takes exactly one KEY_ID (see keys list)")
	}
	st, err := openMigratedStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.RevokeAPIKey(ctx, fs.Arg(0), time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked %s (%s…%s) at %s\n", k.ID, k.DisplayPrefix, k.Last4, k.RevokedAt.Format(time.RFC3339))
	return nil
}
