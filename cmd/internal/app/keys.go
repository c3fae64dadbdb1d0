package app

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

const keysUsage = `Usage:
  memocart keys create --account NAME --mode test|live --tier free|pro|enterprise [--per-minute N] [--json]
      Creates a key and prints it, once, on stdout (nothing else goes to stdout).
  memocart keys list [--account NAME] [--json]
  memocart keys revoke KEY_ID|KEY
      Revokes a key by its id (see keys list) or by the key itself.

Works on the database of MEMOCART_DATABASE_URL, or the same SQLite file memocart dev uses
(MEMOCART_DATA_DIR/memocart.db, also while dev is running); it never creates one.
--json prints JSON on stdout for scripts.`

// runKeys is `memocart keys`.
func runKeys(ctx context.Context, e Env, args []string) error {
	return runSubcommands(ctx, e, "keys", keysUsage, args,
		subcommand{"create", keysCreate}, subcommand{"list", keysList}, subcommand{"revoke", keysRevoke})
}

func keysFlagSet(e Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("keys "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() { fmt.Fprintln(e.Stderr, keysUsage); fs.PrintDefaults() }
	return fs
}

// openMigratedStore opens an existing database for an operator command and
// brings its schema up to date. It never creates a database: run from the
// wrong directory, a command would otherwise work on a new empty SQLite
// file, list nothing and create keys no running service knows.
func openMigratedStore(ctx context.Context, e Env) (*sqlstore.Store, error) {
	if err := requireExistingDatabase(e); err != nil {
		return nil, err
	}
	return openStoreFor(ctx, e, func(ctx context.Context, st *sqlstore.Store) error {
		_, err := st.Migrate(ctx)
		return err
	})
}

// accountModeErrs are the faults of a create subcommand's --account
// (required) and --mode (test or live).
func accountModeErrs(account string, mode models.Mode) []error {
	var errs []error
	if account == "" {
		errs = append(errs, errors.New("--account is required"))
	}
	if !mode.Valid() {
		errs = append(errs, errors.New("--mode must be test or live"))
	}
	return errs
}

// openMigratedStoreUnless refuses a command whose flags have the faults
// errs, all of them at once, and otherwise opens its store
// (openMigratedStore): bad flags never touch the database.
func openMigratedStoreUnless(ctx context.Context, e Env, errs []error) (*sqlstore.Store, error) {
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return openMigratedStore(ctx, e)
}

// openOperatorStore opens the store of an operator's command that reads
// and writes what the service runs on: it must exist and be migrated
// (the service migrates it; a command never does, nor creates one).
func openOperatorStore(ctx context.Context, e Env) (*sqlstore.Store, error) {
	if err := requireExistingDatabase(e); err != nil {
		return nil, err
	}
	return openStoreFor(ctx, e, requireMigrated)
}

// openStoreFor opens the store and readies its schema for its user with
// ready (migrating it, or refusing one not migrated), closing it again
// when that fails.
func openStoreFor(ctx context.Context, e Env, ready func(context.Context, *sqlstore.Store) error) (*sqlstore.Store, error) {
	st, err := OpenStore(ctx, e)
	if err != nil {
		return nil, err
	}
	if err := ready(ctx, st); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// requireExistingDatabase refuses an SQLite file that does not exist yet,
// saying where it looked and how to point elsewhere. Postgres needs no such
// check: connecting to a database that does not exist fails by itself.
func requireExistingDatabase(e Env) error {
	if e.Cfg.DatabaseURL != "" {
		return nil
	}
	path := filepath.Join(e.Cfg.DataDir, "memocart.db")
	_, err := os.Stat(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if abs, aerr := filepath.Abs(path); aerr == nil {
		path = abs
	}
	return fmt.Errorf("no database at %s: operator commands work on an existing one. "+
		"Run them from the directory `memocart dev` runs in, set MEMOCART_DATA_DIR to its data directory "+
		"or MEMOCART_DATABASE_URL to the Postgres database; `memocart migrate` creates a new one", path)
}

func keysCreate(ctx context.Context, e Env, args []string) error {
	fs := keysFlagSet(e, "create")
	account := fs.String("account", "", "account name (created if new)")
	mode := fs.String("mode", "", "test or live")
	tier := fs.String("tier", "", "free, pro or enterprise")
	perMinute := fs.Int("per-minute", 0, "enterprise only: the key's requests per minute")
	asJSON := fs.Bool("json", false, "print the key and its settings as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	errs := accountModeErrs(*account, models.Mode(*mode))
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
	st, err := openMigratedStoreUnless(ctx, e, errs)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	acct, err := st.EnsureAccount(ctx, *account, now)
	if err != nil {
		return err
	}
	secret, err := models.NewAPIKeySecret(e.Cfg.KeyPrefix, models.Mode(*mode), rand.Reader)
	if err != nil {
		return err
	}
	k, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.Mode(*mode), Tier: models.Tier(*tier), PerMinute: *perMinute, CreatedAt: now})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stderr, "created key %s for account %s (%s, %s, %d requests/minute); it is shown once:\n", k.ID, acct.Name, k.Mode, k.Tier, k.RateLimit())
	if *asJSON {
		out := keyJSON(k)
		out.Key = secret
		return printJSON(e, out)
	}
	_, err = fmt.Fprintln(e.Stdout, secret)
	return err
}

// keyOut is a key as --json prints it.
type keyOut struct {
	ID        string     `json:"id"`
	Account   string     `json:"account"`
	Mode      string     `json:"mode"`
	Tier      string     `json:"tier"`
	PerMinute int        `json:"per_minute"`
	Display   string     `json:"display"`
	Key       string     `json:"key,omitempty"` // only at creation
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

func keyJSON(k models.APIKey) keyOut {
	return keyOut{ID: k.ID, Account: k.AccountName, Mode: string(k.Mode), Tier: string(k.Tier), PerMinute: k.RateLimit(),
		Display: k.DisplayPrefix + "…" + k.Last4, CreatedAt: k.CreatedAt.UTC(), RevokedAt: k.RevokedAt}
}

// parseOneArg parses args into fs and returns the one argument its
// subcommand takes; any other count is the error wrongCount.
func parseOneArg(fs *flag.FlagSet, args []string, wrongCount string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", errors.New(wrongCount)
	}
	return fs.Arg(0), nil
}

// parseOneArgStore parses the arguments of a subcommand that takes
// exactly one, then opens the migrated store it acts on (the caller
// closes it).
func parseOneArgStore(ctx context.Context, e Env, fs *flag.FlagSet, args []string, wrongCount string) (string, *sqlstore.Store, error) {
	arg, err := parseOneArg(fs, args, wrongCount)
	if err != nil {
		return "", nil, err
	}
	st, err := openMigratedStore(ctx, e)
	return arg, st, err
}

// printJSON prints v on stdout, indented, for scripts (jq).
func printJSON(e Env, v any) error {
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// listing is what a list subcommand lists: the rows of one account, or of
// all when account is empty; each row as --json prints it; and, for the
// table printed otherwise, its header and a row's tab-separated line.
type listing[T, J any] struct {
	rows   func(ctx context.Context, st *sqlstore.Store, account string) ([]T, error)
	json   func(T) J
	header string
	line   func(T) string
}

// runList runs the list subcommand of fs, which lists what: --account
// narrows it to one account's, --json prints a JSON array for scripts,
// and otherwise it prints a table.
func runList[T, J any](ctx context.Context, e Env, fs *flag.FlagSet, args []string, what string, l listing[T, J]) error {
	account := fs.String("account", "", "only this account's "+what)
	asJSON := fs.Bool("json", false, "print a JSON array")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := openMigratedStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := l.rows(ctx, st, *account)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]J, len(rows))
		for i, r := range rows {
			out[i] = l.json(r)
		}
		return printJSON(e, out)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, l.header)
	for _, r := range rows {
		fmt.Fprintln(tw, l.line(r))
	}
	return tw.Flush()
}

func keysList(ctx context.Context, e Env, args []string) error {
	return runList(ctx, e, keysFlagSet(e, "list"), args, "keys", listing[models.APIKey, keyOut]{
		rows: func(ctx context.Context, st *sqlstore.Store, account string) ([]models.APIKey, error) {
			return st.ListAPIKeys(ctx, account)
		},
		json:   keyJSON,
		header: "ID\tACCOUNT\tMODE\tTIER\tPER_MINUTE\tKEY\tCREATED\tREVOKED",
		line: func(k models.APIKey) string {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s…%s\t%s\t%s", k.ID, k.AccountName, k.Mode, k.Tier, k.RateLimit(),
				k.DisplayPrefix, k.Last4, k.CreatedAt.Format(time.RFC3339), revoked)
		},
	})
}

func keysRevoke(ctx context.Context, e Env, args []string) error {
	ref, st, err := parseOneArgStore(ctx, e, keysFlagSet(e, "revoke"), args, "keys revoke takes exactly one KEY_ID (see keys list) or the key itself")
	if err != nil {
		return err
	}
	defer st.Close()
	var k models.APIKey
	if _, perr := models.ParseAPIKey(e.Cfg.KeyPrefix, ref); perr == nil {
		// The key itself, as keys create or dev printed it: only its hash
		// is stored.
		k, err = st.APIKeyByHash(ctx, models.HashAPIKey(ref))
	} else {
		k, err = st.APIKeyByID(ctx, ref)
	}
	if errors.Is(err, sqlstore.ErrKeyNotFound) {
		return fmt.Errorf("no key %q in this database (keys list shows the ids)", ref)
	}
	if err != nil {
		return err
	}
	if k.RevokedAt != nil {
		fmt.Fprintf(e.Stdout, "%s (%s…%s) was already revoked at %s\n", k.ID, k.DisplayPrefix, k.Last4, k.RevokedAt.Format(time.RFC3339))
		return nil
	}
	if k, err = st.RevokeAPIKey(ctx, k.ID, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "revoked %s (%s…%s) at %s\n", k.ID, k.DisplayPrefix, k.Last4, k.RevokedAt.Format(time.RFC3339))
	return nil
}
