package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// The store runs the same queries on both dialects, so the two migration
// sets must build the same schema: the same tables and columns, each column
// of the same nullability and of a type that stores the same values, and
// the same indexes. The schemas are read back from the migrated databases,
// not from the migration files, so what is compared is what the queries
// meet.
func TestMigrationsBuildTheSameSchemaOnBothDialects(t *testing.T) {
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.DialectPostgres) {
		t.Fatalf("%s is not set: this test needs Postgres", sqlstoretest.EnvPostgresURL)
	}
	pg := readPostgresSchema(t, sqlstoretest.Open(t, sqlstore.DialectPostgres))
	lite := readSQLiteSchema(t, sqlstoretest.Open(t, sqlstore.DialectSQLite))

	// The readers read: a reader that found nothing would find no difference.
	require.Contains(t, pg.columns, "orders")
	assert.Equal(t, column{class: "decimal"}, pg.columns["orders"]["total"])
	assert.Equal(t, index{table: "orders", columns: "account_id, mode, created_at DESC, id DESC"}, pg.indexes["orders_list_idx"])
	assert.Equal(t, index{table: "orders", unique: true, columns: "account_id, mode, idempotency_key", predicate: "idempotency_key is not null"},
		lite.indexes["orders_idempotency_idx"])
	assert.Equal(t, "cart_id, position", lite.primaryKeys["cart_items"])
	assert.Equal(t, []string{"cart_id", "number"}, lite.uniques["orders"])
	assert.Equal(t, column{class: "decimal", nullable: true}, pg.columns["refunds"]["value"])
	assert.Equal(t, index{table: "refunds", columns: "created_at", predicate: "workflow_started_at is null"},
		lite.indexes["refunds_workflow_pending_idx"])

	seen := map[string]bool{}
	var diffs []string
	for _, d := range schemaDiff(pg, lite) {
		if _, ok := knownSchemaDifferences[d]; ok {
			seen[d] = true
			continue
		}
		diffs = append(diffs, d)
	}
	if len(diffs) > 0 {
		t.Errorf("the Postgres and SQLite migrations build different schemas:\n  %s", strings.Join(diffs, "\n  "))
	}
	for _, d := range slices.Sorted(maps.Keys(knownSchemaDifferences)) {
		if !seen[d] {
			t.Errorf("known difference no longer found, remove it from knownSchemaDifferences: %s", d)
		}
	}
}

// knownSchemaDifferences are the differences the test allows, each with
// its reason. A difference listed here that goes away fails the test, so
// the list stays true.
var knownSchemaDifferences = map[string]string{
	"column accounts.id: nullable on sqlite only":          sqliteNullableKey,
	"column alerts.kind: nullable on sqlite only":          sqliteNullableKey,
	"column api_keys.id: nullable on sqlite only":          sqliteNullableKey,
	"column carts.id: nullable on sqlite only":             sqliteNullableKey,
	"column orders.id: nullable on sqlite only":            sqliteNullableKey,
	"column payments.id: nullable on sqlite only":          sqliteNullableKey,
	"column webhook_endpoints.id: nullable on sqlite only": sqliteNullableKey,
	"column webhook_events.id: nullable on sqlite only":    sqliteNullableKey,
}

// sqliteNullableKey is the reason of the nullable SQLite keys above.
const sqliteNullableKey = "SQLite lets a PRIMARY KEY column other than a lone INTEGER hold NULL " +
	"unless it is declared NOT NULL. Adding that means rebuilding the table, and rebuilding a " +
	"table others reference needs foreign keys off, which a migration's transaction cannot " +
	"switch. The store never writes a NULL id (row ids are Go strings); new tables declare " +
	"their key columns NOT NULL."

// schema is what the test compares of a migrated database.
type schema struct {
	columns     map[string]map[string]column // by table, then column
	primaryKeys map[string]string            // by table: the columns, in order
	uniques     map[string][]string          // by table: each UNIQUE constraint's columns, sorted
	indexes     map[string]index             // by name: those made by CREATE INDEX
}

// column is a column's coarse type class and nullability.
type column struct {
	class    string // text, integer, decimal, timestamp, bool or bytes
	nullable bool
}

// index is an index made by CREATE INDEX.
type index struct {
	table     string
	unique    bool
	columns   string // in order, each with DESC when descending
	predicate string // of a partial index, normalized by normalizePredicate
}

func (i index) String() string {
	s := "ON " + i.table + " (" + i.columns + ")"
	if i.unique {
		s = "UNIQUE " + s
	}
	if i.predicate != "" {
		s += " WHERE " + i.predicate
	}
	return s
}

func newSchema() schema {
	return schema{columns: map[string]map[string]column{}, primaryKeys: map[string]string{},
		uniques: map[string][]string{}, indexes: map[string]index{}}
}

// sqliteStores is how SQLite stores a class it has no type for: amounts as
// exact decimal TEXT (NUMERIC affinity would make them floats), booleans
// as INTEGER 0 and 1.
var sqliteStores = map[string]string{"decimal": "text", "bool": "integer"}

// schemaDiff lists every difference between the schemas, one readable
// line each, sorted.
func schemaDiff(pg, lite schema) []string {
	var out []string
	for _, table := range union(pg.columns, lite.columns) {
		pc, pok := pg.columns[table]
		lc, lok := lite.columns[table]
		if !pok || !lok {
			out = append(out, fmt.Sprintf("table %s: only on %s", table, only(pok)))
			continue
		}
		for _, name := range union(pc, lc) {
			p, pok := pc[name]
			l, lok := lc[name]
			where := "column " + table + "." + name
			switch {
			case !pok || !lok:
				out = append(out, fmt.Sprintf("%s: only on %s", where, only(pok)))
				continue
			case l.class != p.class && l.class != sqliteStores[p.class]:
				out = append(out, fmt.Sprintf("%s: %s on postgres, %s on sqlite", where, p.class, l.class))
			}
			if p.nullable != l.nullable {
				out = append(out, fmt.Sprintf("%s: nullable on %s only", where, only(p.nullable)))
			}
		}
		if p, l := pg.primaryKeys[table], lite.primaryKeys[table]; p != l {
			out = append(out, fmt.Sprintf("primary key of %s: (%s) on postgres, (%s) on sqlite", table, p, l))
		}
		if p, l := pg.uniques[table], lite.uniques[table]; !slices.Equal(p, l) {
			out = append(out, fmt.Sprintf("unique constraints of %s: %q on postgres, %q on sqlite", table, p, l))
		}
	}
	for _, name := range union(pg.indexes, lite.indexes) {
		p, pok := pg.indexes[name]
		l, lok := lite.indexes[name]
		switch {
		case !pok:
			out = append(out, fmt.Sprintf("index %s: only on sqlite: %s", name, l))
		case !lok:
			out = append(out, fmt.Sprintf("index %s: only on postgres: %s", name, p))
		case p != l:
			out = append(out, fmt.Sprintf("index %s: %s on postgres, %s on sqlite", name, p, l))
		}
	}
	slices.Sort(out)
	return out
}

func union[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// only names the dialect that has something when the other does not.
func only(onPostgres bool) string {
	if onPostgres {
		return "postgres"
	}
	return "sqlite"
}

// postgresClasses maps information_schema's data_type to a class.
var postgresClasses = map[string]string{
	"text": "text", "character": "text", "character varying": "text",
	"smallint": "integer", "integer": "integer", "bigint": "integer",
	"numeric":                  "decimal",
	"timestamp with time zone": "timestamp", "timestamp without time zone": "timestamp",
	"boolean": "bool",
	"bytea":   "bytes",
	// A transaction id (webhook_events.txid): a 64-bit integer.
	"xid8": "integer",
}

// sqliteClasses maps a SQLite column's declared type to a class.
var sqliteClasses = map[string]string{
	"TEXT": "text", "INTEGER": "integer", "DATETIME": "timestamp", "BLOB": "bytes",
}

func readPostgresSchema(t *testing.T, st *sqlstore.Store) schema {
	t.Helper()
	ctx := context.Background()
	db, err := st.SQLDB()
	require.NoError(t, err)
	s := newSchema()

	rows, err := db.QueryContext(ctx, `SELECT c.table_name, c.column_name, c.data_type, c.is_nullable = 'YES'
		FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`)
	require.NoError(t, err)
	eachRow(t, rows, func() error {
		var table, name, typ string
		var nullable bool
		if err := rows.Scan(&table, &name, &typ, &nullable); err != nil {
			return err
		}
		class, ok := postgresClasses[typ]
		if !ok {
			t.Errorf("column %s.%s: no class for Postgres type %q: add it to postgresClasses", table, name, typ)
		}
		if s.columns[table] == nil {
			s.columns[table] = map[string]column{}
		}
		s.columns[table][name] = column{class: class, nullable: nullable}
		return nil
	})

	// One row per key column of every index of the schema's tables, in
	// order; an expression (attnum 0) by its text.
	rows, err = db.QueryContext(ctx, `SELECT i.relname, t.relname, x.indisunique, x.indisprimary,
			EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid AND c.contype = 'u'),
			COALESCE(pg_get_expr(x.indpred, x.indrelid), ''),
			COALESCE(a.attname, pg_get_indexdef(x.indexrelid, k.n, false)),
			(x.indoption[k.n - 1] & 1) = 1
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class t ON t.oid = x.indrelid
		CROSS JOIN LATERAL generate_series(1, x.indnkeyatts) AS k(n)
		LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[k.n - 1] AND x.indkey[k.n - 1] <> 0
		WHERE t.relnamespace = to_regnamespace(current_schema()) AND t.relkind = 'r'
		ORDER BY i.relname, k.n`)
	require.NoError(t, err)
	type pgIndex struct {
		index
		primary, constraint bool
		cols                []string
	}
	byName := map[string]*pgIndex{}
	eachRow(t, rows, func() error {
		var name, table, pred, col string
		var unique, primary, constraint, desc bool
		if err := rows.Scan(&name, &table, &unique, &primary, &constraint, &pred, &col, &desc); err != nil {
			return err
		}
		x := byName[name]
		if x == nil {
			x = &pgIndex{index: index{table: table, unique: unique, predicate: normalizePredicate(pred)}, primary: primary, constraint: constraint}
			byName[name] = x
		}
		if desc {
			col += " DESC"
		}
		x.cols = append(x.cols, col)
		return nil
	})
	for name, x := range byName {
		cols := strings.Join(x.cols, ", ")
		switch {
		case x.primary:
			s.primaryKeys[x.table] = cols
		case x.constraint:
			s.uniques[x.table] = append(s.uniques[x.table], cols)
		default:
			x.index.columns = cols
			s.indexes[name] = x.index
		}
	}
	for _, u := range s.uniques {
		slices.Sort(u)
	}
	return s
}

func readSQLiteSchema(t *testing.T, st *sqlstore.Store) schema {
	t.Helper()
	ctx := context.Background()
	db, err := st.SQLDB()
	require.NoError(t, err)
	s := newSchema()

	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	require.NoError(t, err)
	eachRow(t, rows, func() error {
		var name string
		err := rows.Scan(&name)
		tables = append(tables, name)
		return err
	})
	for _, table := range tables {
		s.columns[table] = map[string]column{}
		var pk []string // by position in the key, from 1
		rows, err := db.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, table)
		require.NoError(t, err)
		eachRow(t, rows, func() error {
			var name, typ string
			var notNull bool
			var pos int
			if err := rows.Scan(&name, &typ, &notNull, &pos); err != nil {
				return err
			}
			class, ok := sqliteClasses[strings.ToUpper(typ)]
			if !ok {
				t.Errorf("column %s.%s: no class for SQLite type %q: add it to sqliteClasses", table, name, typ)
			}
			s.columns[table][name] = column{class: class, nullable: !notNull}
			if pos > 0 {
				pk = append(pk, make([]string, max(0, pos-len(pk)))...)
				pk[pos-1] = name
			}
			return nil
		})
		s.primaryKeys[table] = strings.Join(pk, ", ")
		// A lone INTEGER PRIMARY KEY is the rowid, which cannot be NULL
		// whatever table_info says.
		if len(pk) == 1 && s.columns[table][pk[0]].class == "integer" {
			c := s.columns[table][pk[0]]
			c.nullable = false
			s.columns[table][pk[0]] = c
		}

		type liteIndex struct {
			name, origin    string
			unique, partial bool
		}
		var idxs []liteIndex
		rows, err = db.QueryContext(ctx, `SELECT name, "unique", origin, partial FROM pragma_index_list(?)`, table)
		require.NoError(t, err)
		eachRow(t, rows, func() error {
			var x liteIndex
			err := rows.Scan(&x.name, &x.unique, &x.origin, &x.partial)
			idxs = append(idxs, x)
			return err
		})
		for _, x := range idxs {
			var cols []string
			rows, err := db.QueryContext(ctx, `SELECT COALESCE(name, '<expression>'), "desc" FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno`, x.name)
			require.NoError(t, err)
			eachRow(t, rows, func() error {
				var col string
				var desc bool
				if err := rows.Scan(&col, &desc); err != nil {
					return err
				}
				if desc {
					col += " DESC"
				}
				cols = append(cols, col)
				return nil
			})
			switch x.origin {
			case "pk": // read from table_info above
			case "u":
				s.uniques[table] = append(s.uniques[table], strings.Join(cols, ", "))
			default:
				var pred string
				if x.partial {
					var ddl string
					require.NoError(t, db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`, x.name).Scan(&ddl))
					m := whereClause.FindStringSubmatch(ddl)
					require.NotNil(t, m, "the WHERE of partial index %s in %q", x.name, ddl)
					pred = normalizePredicate(m[1])
				}
				s.indexes[x.name] = index{table: table, unique: x.unique, columns: strings.Join(cols, ", "), predicate: pred}
			}
		}
		slices.Sort(s.uniques[table])
	}
	return s
}

var whereClause = regexp.MustCompile(`(?is)\bWHERE\b(.*)$`)

var (
	pgCast  = regexp.MustCompile(`::(character varying|[a-z_]+)`)
	spaces  = regexp.MustCompile(`\s+`)
	unparen = strings.NewReplacer("(", "", ")", "", "!=", "<>")
)

// normalizePredicate brings a partial index's predicate to one form,
// whether Postgres printed it (parenthesized, with casts such as ::text)
// or SQLite kept it (the migration's text): lower case, no casts, no
// parentheses, single spaces. Dropping the parentheses could equate
// predicates that group differently; none here do.
func normalizePredicate(p string) string {
	p = pgCast.ReplaceAllString(strings.ToLower(p), "")
	p = strings.TrimSpace(spaces.ReplaceAllString(unparen.Replace(p), " "))
	// Postgres prints "x IN (a, b)" as "x = ANY (ARRAY[a, b])".
	return pgAnyArray.ReplaceAllString(p, "$1 in $2")
}

var pgAnyArray = regexp.MustCompile(`(\w+) = any array\[([^\]]*)\]`)

// eachRow calls fn for every row, then closes rows and checks their error.
func eachRow(t *testing.T, rows *sql.Rows, fn func() error) {
	t.Helper()
	defer rows.Close()
	for rows.Next() {
		require.NoError(t, fn())
	}
	require.NoError(t, rows.Err())
}
