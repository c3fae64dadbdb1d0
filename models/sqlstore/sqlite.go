package sqlstore

import (
	"database/sql"
	"errors"
	"regexp"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
	"modernc.org/sqlite"
)

// sqliteDialector is a minimal GORM dialector over modernc.org/sqlite, the
// pure-Go SQLite that the embedded Temporal server also links. The common
// third-party GORM SQLite drivers either need cgo or register their own
// "sqlite" database/sql driver, which panics when linked next to modernc's.
// Schema changes go through versioned SQL migrations, so this dialector only
// has to build and run queries; its Migrator is GORM's generic one.
type sqliteDialector struct {
	dsn string
}

func (sqliteDialector) Name() string { return "sqlite" }

func (d sqliteDialector) Initialize(db *gorm.DB) error {
	callbacks.RegisterDefaultCallbacks(db, &callbacks.Config{
		CreateClauses:        []string{"INSERT", "VALUES", "ON CONFLICT", "RETURNING"},
		UpdateClauses:        []string{"UPDATE", "SET", "WHERE", "RETURNING"},
		DeleteClauses:        []string{"DELETE", "FROM", "WHERE", "RETURNING"},
		LastInsertIDReversed: true,
	})
	if db.ConnPool == nil {
		conn, err := sql.Open("sqlite", d.dsn)
		if err != nil {
			return err
		}
		db.ConnPool = conn
	}
	return nil
}

func (d sqliteDialector) Migrator(db *gorm.DB) gorm.Migrator {
	return migrator.Migrator{Config: migrator.Config{DB: db, Dialector: d}}
}

func (sqliteDialector) DataTypeOf(field *schema.Field) string {
	switch field.DataType {
	case schema.Bool:
		return "numeric"
	case schema.Int, schema.Uint:
		return "integer"
	case schema.Float:
		return "real"
	case schema.Time:
		return "datetime"
	case schema.Bytes:
		return "blob"
	default:
		return "text"
	}
}

func (sqliteDialector) DefaultValueOf(*schema.Field) clause.Expression {
	return clause.Expr{SQL: "NULL"}
}

func (sqliteDialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) {
	w.WriteByte('?')
}

func (sqliteDialector) QuoteTo(w clause.Writer, str string) {
	w.WriteByte('`')
	for i := 0; i < len(str); i++ {
		switch c := str[i]; c {
		case '.':
			w.WriteString("`.`")
		case '`':
			w.WriteString("``")
		default:
			w.WriteByte(c)
		}
	}
	w.WriteByte('`')
}

var sqlitePlaceholder = regexp.MustCompile(`\?`)

func (sqliteDialector) Explain(sql string, vars ...any) string {
	return logger.ExplainSQL(sql, sqlitePlaceholder, `"`, vars...)
}

// SQLite extended result codes for constraint failures (sqlite3.h).
const (
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
	sqliteConstraintForeignKey = 787
)

// Translate maps driver errors to GORM's, so the store checks
// gorm.ErrDuplicatedKey the same way on both databases.
func (sqliteDialector) Translate(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqliteConstraintPrimaryKey, sqliteConstraintUnique:
			return errors.Join(gorm.ErrDuplicatedKey, err)
		case sqliteConstraintForeignKey:
			return errors.Join(gorm.ErrForeignKeyViolated, err)
		}
	}
	return err
}
