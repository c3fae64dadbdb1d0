package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"google.golang.org/grpc"
)

// fakeLister answers ListSearchAttributes with fixed custom attributes.
type fakeLister struct {
	custom map[string]enumspb.IndexedValueType
	err    error
	asked  string // the namespace asked about
}

func (f *fakeLister) ListSearchAttributes(_ context.Context, in *operatorservice.ListSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	f.asked = in.GetNamespace()
	if f.err != nil {
		return nil, f.err
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.custom}, nil
}

func TestSearchAttributesAreWhatTheWorkflowSets(t *testing.T) {
	// The names come from the keys the workflow upserts; a renamed key
	// must change the registered list with it.
	assert.Equal(t, map[string]enumspb.IndexedValueType{
		"OrderNumber":   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"OrderStatus":   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"PaymentStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"OrderMode":     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"RefundStatus":  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}, SearchAttributes())
	for _, k := range []interface{ GetName() string }{SearchAttrOrderNumber, SearchAttrOrderStatus, SearchAttrPaymentStatus, SearchAttrOrderMode, SearchAttrRefundStatus} {
		assert.Contains(t, SearchAttributes(), k.GetName())
	}
}

func TestCheckNamespace(t *testing.T) {
	kw := enumspb.INDEXED_VALUE_TYPE_KEYWORD
	for _, tt := range []struct {
		name     string
		custom   map[string]enumspb.IndexedValueType
		wantErr  []string // substrings of the error; nil = no error
		notInErr []string
	}{
		{name: "all registered, plus others", custom: map[string]enumspb.IndexedValueType{
			"OrderNumber": kw, "OrderStatus": kw, "PaymentStatus": kw, "OrderMode": kw, "RefundStatus": kw, "CustomerTier": enumspb.INDEXED_VALUE_TYPE_INT}},
		{name: "none registered", custom: nil,
			wantErr: []string{`namespace "orders"`, "missing search attribute(s) OrderMode, OrderNumber, OrderStatus, PaymentStatus, RefundStatus",
				"temporal operator search-attribute create --namespace orders --name PaymentStatus --type Keyword"}},
		{name: "one missing", custom: map[string]enumspb.IndexedValueType{"OrderNumber": kw, "PaymentStatus": kw, "OrderMode": kw, "RefundStatus": kw},
			wantErr:  []string{"missing search attribute(s) OrderStatus;", "--name OrderStatus --type Keyword"},
			notInErr: []string{"--name OrderNumber", "--name PaymentStatus"}},
		// A namespace prepared before RefundStatus existed: the upgrade step.
		{name: "prepared before RefundStatus", custom: map[string]enumspb.IndexedValueType{"OrderNumber": kw, "OrderStatus": kw, "PaymentStatus": kw, "OrderMode": kw},
			wantErr:  []string{"missing search attribute(s) RefundStatus;", "temporal operator search-attribute create --namespace orders --name RefundStatus --type Keyword"},
			notInErr: []string{"--name OrderNumber", "--name OrderStatus", "--name PaymentStatus", "--name OrderMode"}},
		{name: "wrong type", custom: map[string]enumspb.IndexedValueType{"OrderNumber": enumspb.INDEXED_VALUE_TYPE_TEXT, "OrderStatus": kw, "PaymentStatus": kw, "OrderMode": kw, "RefundStatus": kw},
			wantErr: []string{"wrong type: OrderNumber is Text, want Keyword"}, notInErr: []string{"missing"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLister{custom: tt.custom}
			err := CheckNamespace(context.Background(), f, "orders")
			assert.Equal(t, "orders", f.asked)
			if tt.wantErr == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, s := range tt.wantErr {
				assert.Contains(t, err.Error(), s)
			}
			for _, s := range tt.notInErr {
				assert.NotContains(t, err.Error(), s)
			}
		})
	}
}

func TestCheckNamespaceListFails(t *testing.T) {
	cause := errors.New("namespace orders is not found")
	err := CheckNamespace(context.Background(), &fakeLister{err: cause}, "orders")
	require.ErrorIs(t, err, cause)
	assert.Contains(t, err.Error(), `namespace "orders"`)
}
