package sqlstore

import (
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/schema"
)

// The client's read scans by position: its column list, its scan
// destinations and orderRow's fields must stay in one order, or a value
// lands in the wrong field (or the scan fails) after a column is added.
func TestOrderColumnsMatchTheRow(t *testing.T) {
	s, err := schema.Parse(&orderRow{}, &sync.Map{}, schema.NamingStrategy{})
	require.NoError(t, err)
	var want []string
	for _, f := range s.Fields {
		want = append(want, f.DBName)
	}
	require.Equal(t, want, orderColumns, "orderColumns must list orderRow's columns in field order")

	var r clientOrderRow
	dest := r.scanDest()
	require.Len(t, dest, len(orderColumns)+3, "one destination per column plus the three aggregates")
	row := reflect.ValueOf(&r.Row).Elem()
	for i := range orderColumns {
		require.Equal(t, row.Field(i).Addr().Interface(), dest[i], "destination %d is not field %s", i, row.Type().Field(i).Name)
	}
	require.Equal(t, []any{&r.StepsJSON, &r.ItemsJSON, &r.PaymentsJSON}, dest[len(orderColumns):])
}
