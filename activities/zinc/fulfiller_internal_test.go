package zinc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// The fixtures in testdata are shaped after the official SDKs' types
// (generated from Zinc's API definition) and the documented examples,
// with the liberties a real answer takes: nulls, naive and offset times,
// amounts written as floats, merchant ids only in the job result,
// checkpoints out of order. Replace them with captured answers when
// there are some.
func loadOrder(t *testing.T, name string) Order {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var o Order
	require.NoError(t, json.Unmarshal(data, &o))
	return o
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// assertPrice compares money by value: 25.99 from 2599 cents and 25.990
// from 2599.0 are the same price.
func assertPrice(t *testing.T, want, got *models.SupplierPrice) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got)
		return
	}
	require.NotNil(t, got)
	assert.Equal(t, want.Currency, got.Currency)
	assert.Equal(t, want.Breakdown, got.Breakdown)
	for _, f := range []struct {
		name      string
		want, got decimal.Decimal
	}{
		{"subtotal", want.Subtotal, got.Subtotal}, {"tax", want.Tax, got.Tax},
		{"shipping", want.Shipping, got.Shipping}, {"discount", want.Discount, got.Discount},
		{"fees", want.Fees, got.Fees}, {"total", want.Total, got.Total},
	} {
		assert.Truef(t, f.want.Equal(f.got), "%s: want %s, got %s", f.name, f.want, f.got)
	}
}

func TestFulfilmentFromRecordedOrders(t *testing.T) {
	ups := models.Parcel{
		Carrier: "ups", TrackingNumber: "1Z999AA10123456784", TrackingURL: "https://t.17track.net/en#nums=ZPY000123456789YQ",
		Status: models.ParcelInTransit, EstimatedDelivery: "2026-03-06",
		Checkpoints: []models.Checkpoint{
			{At: at("2026-03-03T21:40:00Z"), Status: "in_transit", Message: "Departed from facility", City: "Louisville", State: "KY", Country: "US"},
			{At: at("2026-03-03T09:12:44.25Z"), Status: "pending", Message: "Shipping label created", City: "Seattle", State: "WA", Country: "US", Zip: "98109"},
		},
	}
	failed := func(code string, retry bool) models.Fulfilment {
		return models.Fulfilment{
			Ref: "6f1c2a4e-8b0d-4c3e-9a51-0d2e7b9c4f10", Stage: models.FulfilmentFailed, ProviderStatus: "order_failed",
			FailureCode: code, FailureReason: models.FulfilmentFailureReason(code), Retryable: retry,
		}
	}
	tests := []struct {
		file     string
		want     models.Fulfilment
		price    *models.SupplierPrice
		progress models.OrderStatus
	}{
		{
			file:     "pending.json",
			want:     models.Fulfilment{Ref: "6f1c2a4e-8b0d-4c3e-9a51-0d2e7b9c4f10", Stage: models.FulfilmentPending, ProviderStatus: "pending"},
			progress: models.OrderPaid,
		},
		{
			file: "placed.json",
			want: models.Fulfilment{
				Ref: "6f1c2a4e-8b0d-4c3e-9a51-0d2e7b9c4f10", Stage: models.FulfilmentPlaced, ProviderStatus: "order_placed",
				MerchantOrderIDs: []string{"112-4824932-0694615"}, Parcels: []models.Parcel{ups},
			},
			price: &models.SupplierPrice{
				Currency: "USD", Subtotal: dec("25.99"), Tax: dec("2.14"), Shipping: dec("4.99"), Discount: dec("4.99"),
				Total: dec("28.13"), Breakdown: true,
			},
			progress: models.OrderShipped,
		},
		{
			// breakdown_recorded false: the zeros are not amounts, only the total is.
			file: "placed_total_only.json",
			want: models.Fulfilment{
				Ref: "9a0e4b6c-2d1f-4e3a-8c7b-5f6e1d2c3b40", Stage: models.FulfilmentPlaced, ProviderStatus: "order_placed",
				MerchantOrderIDs: []string{"113-0000001-0000002"},
			},
			price:    &models.SupplierPrice{Currency: "USD", Total: dec("41.50")},
			progress: models.OrderOrdered,
		},
		{file: "failed_product_out_of_stock.json", want: failed("product_out_of_stock", false), progress: models.OrderFailed},
		{file: "failed_retailer_rate_limited.json", want: failed("retailer_rate_limited", true), progress: models.OrderFailed},
		{file: "failed_retailer_unavailable.json", want: failed("retailer_unavailable", true), progress: models.OrderFailed},
		{
			file:     "failed_max_price_exceeded.json",
			want:     failed("max_price_exceeded", false),
			price:    &models.SupplierPrice{Currency: "USD", Subtotal: dec("29.99"), Tax: dec("2.48"), Shipping: dec("2.43"), Total: dec("34.90"), Breakdown: true},
			progress: models.OrderFailed,
		},
		{
			file: "cancelled_by_retailer.json",
			want: models.Fulfilment{
				Ref: "c4b3a2d1-0e9f-48a7-b6c5-d4e3f2a1b0c9", Stage: models.FulfilmentFailed, ProviderStatus: "cancelled_by_retailer",
				MerchantOrderIDs: []string{"12-10432-88211"},
				FailureCode:      "cancelled_by_retailer", FailureReason: "The retailer cancelled the order.",
			},
			// breakdown_recorded null: written before the flag existed, taken as true.
			price:    &models.SupplierPrice{Currency: "USD", Subtotal: dec("24"), Tax: dec("1.98"), Total: dec("25.98"), Breakdown: true},
			progress: models.OrderFailed,
		},
		{
			file: "cancelled.json",
			want: models.Fulfilment{
				Ref: "d5c4b3a2-1f0e-49b8-a7d6-e5f4a3b2c1d0", Stage: models.FulfilmentFailed, ProviderStatus: "cancelled",
				FailureCode: "cancelled", FailureReason: models.FulfilmentFailureReason("cancelled"),
			},
			progress: models.OrderFailed,
		},
		{
			file: "split_shipment.json",
			want: models.Fulfilment{
				Ref: "e6d5c4b3-2a1f-40c9-b8e7-f6a5b4c3d2e1", Stage: models.FulfilmentPlaced, ProviderStatus: "order_placed",
				// Only in the job result, as objects.
				MerchantOrderIDs: []string{"112-1111111-2222222", "112-3333333-4444444"},
				Parcels: []models.Parcel{
					{
						Carrier: "ups", TrackingNumber: "1Z999AA10000000001", TrackingURL: "https://t.17track.net/en#nums=ZPY000000000001YQ",
						Status: models.ParcelDelivered, EstimatedDelivery: "2026-03-05",
						Checkpoints: []models.Checkpoint{
							{At: at("2026-03-05T18:02:00Z"), Status: "delivered", Message: "Delivered, front door", City: "New York", State: "NY", Country: "US", Zip: "10001"},
							{At: at("2026-03-04T06:10:00Z"), Status: "in_transit", Message: "Out for delivery", City: "New York", State: "NY", Country: "US"},
							{At: at("2026-03-03T10:00:00Z"), Status: "pending", Message: "Shipping label created", City: "Seattle", State: "WA", Country: "US"},
						},
					},
					{
						Carrier: "fedex", TrackingNumber: "771234567890", TrackingURL: "https://t.17track.net/en#nums=ZPY000000000002YQ",
						Status: models.ParcelInTransit, EstimatedDelivery: "2026-03-07",
						// Listed oldest first on the wire; most recent first here.
						Checkpoints: []models.Checkpoint{
							{At: at("2026-03-05T07:30:00Z"), Status: "in_transit", Message: "Picked up", City: "Memphis", State: "TN", Country: "US", Zip: "38118"},
							{At: at("2026-03-04T20:00:00Z"), Status: "pending", Message: "Shipment information sent to FedEx", City: "Memphis", State: "TN", Country: "US"},
						},
					},
				},
			},
			price:    &models.SupplierPrice{Currency: "USD", Subtotal: dec("72"), Tax: dec("5.94"), Fees: dec("1.50"), Total: dec("79.44"), Breakdown: true},
			progress: models.OrderShipped, // the FedEx parcel is still moving
		},
		{
			file: "undeliverable.json",
			want: models.Fulfilment{
				Ref: "f7e6d5c4-3b2a-41da-c9f8-a7b6c5d4e3f2", Stage: models.FulfilmentPlaced, ProviderStatus: "order_placed",
				MerchantOrderIDs: []string{"112-5555555-6666666"},
				Parcels: []models.Parcel{{
					Carrier: "usps", TrackingNumber: "9400111899223100000000", TrackingURL: "https://t.17track.net/en#nums=ZPY000000000003YQ",
					Status: models.ParcelUndeliverable,
					Checkpoints: []models.Checkpoint{
						{At: at("2026-03-06T15:00:00Z"), Status: "undeliverable", Message: "Return to sender: insufficient address", City: "New York", State: "NY", Country: "US", Zip: "10001"},
						{At: at("2026-03-05T09:00:00Z"), Status: "in_transit", Message: "Arrived at USPS regional facility", City: "Kearny", State: "NJ", Country: "US"},
					},
				}},
			},
			price:    &models.SupplierPrice{Currency: "USD", Subtotal: dec("25.99"), Tax: dec("2.14"), Total: dec("28.13"), Breakdown: true},
			progress: models.OrderFailed,
		},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".json"), func(t *testing.T) {
			got := fulfilment(loadOrder(t, tt.file))
			assertPrice(t, tt.price, got.Price)
			got.Price = nil
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.progress, got.Progress().Status)
		})
	}
}

func TestFulfilmentOfUnknownStatusKeepsChecking(t *testing.T) {
	var o Order
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x","status":"awaiting_review","tracking_numbers":[
		{"carrier":"dhl","tracking_number":"123","status":"exception","checkpoints":[{"checkpoint_time":"garbage","status":"x","message":"m"}]}]}`), &o))
	got := fulfilment(o)
	assert.Equal(t, models.FulfilmentPending, got.Stage)
	assert.Equal(t, "awaiting_review", got.ProviderStatus)
	require.Len(t, got.Parcels, 1)
	assert.Equal(t, models.ParcelPending, got.Parcels[0].Status, "an unknown parcel status is pending")
	assert.True(t, got.Parcels[0].Checkpoints[0].At.IsZero(), "an unreadable time is zero, not a failure")
}

// testOrder is a valid live order of two Amazon items.
func testOrder() models.Order {
	return models.Order{
		ID:             "ord_0123456789abcdefghijklmn",
		Number:         "40000000019",
		Currency:       "USD",
		SupplierBudget: dec("31.259"),
		Items: []models.CartItem{
			{ProductURL: "https://www.amazon.com/dp/B07JGBW826", Marketplace: models.MarketplaceAmazon, Quantity: 2},
			{ProductURL: "https://www.amazon.com/dp/B09V3KXJPB", Marketplace: models.MarketplaceAmazon, Quantity: 1},
		},
		Address: models.ShippingAddress{
			Name: "Ada King Lovelace", Phone: "+1 212 555 0100", Line1: "12 St James's Square", Line2: "Apt 4",
			City: "New York", Region: "NY", PostalCode: "10001", Country: "us",
		},
	}
}

func TestOrderRequestJSON(t *testing.T) {
	// The request is the same at every attempt but for the idempotency key
	// (%[1]q) and the attempt in the metadata (%[2]d).
	const want = `{
		"products": [
			{"url": "https://www.amazon.com/dp/B07JGBW826", "quantity": 2},
			{"url": "https://www.amazon.com/dp/B09V3KXJPB", "quantity": 1}
		],
		"max_price": 3125,
		"shipping_address": {
			"first_name": "Ada King", "last_name": "Lovelace",
			"address_line1": "12 St James's Square", "address_line2": "Apt 4",
			"city": "New York", "state": "NY", "postal_code": "10001",
			"phone_number": "+1 212 555 0100", "country": "US"
		},
		"idempotency_key": %[1]q,
		"metadata": {"memocart_order_id": "ord_0123456789abcdefghijklmn", "memocart_order_number": "40000000019", "attempt": %[2]d},
		"po_number": "40000000019"
	}`
	tests := []struct {
		attempt int
		key     string
	}{
		{1, "ord_0123456789abcdefghijklmn"},
		{3, "ord_0123456789abcdefghijklmn-3"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("attempt %d", tt.attempt), func(t *testing.T) {
			req, err := orderRequest(testOrder(), tt.attempt)
			require.NoError(t, err)
			got, err := json.Marshal(req)
			require.NoError(t, err)
			assert.JSONEq(t, fmt.Sprintf(want, tt.key, tt.attempt), string(got))
			assert.LessOrEqual(t, len(req.IdempotencyKey), MaxIdempotencyKey)
		})
	}
}

func TestOrderRequestMaxPriceRoundsDown(t *testing.T) {
	tests := []struct {
		budget string
		want   int64
	}{
		{"31.25", 3125},
		{"31.259", 3125},
		{"31.2499", 3124},
		{"31.2", 3120},
		{"0.01", 1},
		{"1000", 100000},
	}
	for _, tt := range tests {
		t.Run(tt.budget, func(t *testing.T) {
			o := testOrder()
			o.SupplierBudget = dec(tt.budget)
			req, err := orderRequest(o, 1)
			require.NoError(t, err)
			assert.Equal(t, tt.want, req.MaxPrice)
		})
	}
}

func TestOrderRequestEbayVariation(t *testing.T) {
	o := testOrder()
	o.Items = []models.CartItem{
		{ProductURL: "https://www.ebay.com/itm/256789012345", Marketplace: models.MarketplaceEbay, Quantity: 1, Variation: "567890123456"},
		{ProductURL: "https://www.ebay.com/itm/256789012346?var=111", Marketplace: models.MarketplaceEbay, Quantity: 1, Variation: "111"},
	}
	req, err := orderRequest(o, 1)
	require.NoError(t, err)
	assert.Equal(t, "https://www.ebay.com/itm/256789012345?var=567890123456", req.Products[0].URL)
	assert.Equal(t, "https://www.ebay.com/itm/256789012346?var=111", req.Products[1].URL, "a link naming its variation is kept")
}

func TestOrderRequestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *models.Order)
		reason string
	}{
		{"not USD", func(o *models.Order) { o.Currency = "EUR" }, msgNotUSD},
		{"one-word name", func(o *models.Order) { o.Address.Name = "Madonna" }, msgNeedFullName},
		{"line1 too long", func(o *models.Order) { o.Address.Line1 = strings.Repeat("a", models.MaxAddressLine+1) }, msgLineTooLong},
		{"line2 too long", func(o *models.Order) { o.Address.Line2 = strings.Repeat("é", models.MaxAddressLine+1) }, msgLineTooLong},
		{"no phone", func(o *models.Order) { o.Address.Phone = "" }, msgNeedPhone},
		{"country not alpha-2", func(o *models.Order) { o.Address.Country = "USA" }, "The retailer refused the shipping address."},
		{"no items", func(o *models.Order) { o.Items = nil }, msgNoItems},
		{"no link", func(o *models.Order) { o.Items[1].ProductURL = " " }, msgBadItem},
		{"no quantity", func(o *models.Order) { o.Items[1].Quantity = 0 }, msgBadItem},
		{"too many", func(o *models.Order) { o.Items[0].Quantity = 101 }, models.FulfilmentFailureReason("quantity_limit_exceeded")},
		{"two retailers", func(o *models.Order) { o.Items[1].Marketplace = models.MarketplaceEbay }, msgMixedRetailers},
		{"budget below a cent", func(o *models.Order) { o.SupplierBudget = dec("0.009") }, msgNoBudget},
		{"no budget", func(o *models.Order) { o.SupplierBudget = decimal.Zero }, msgNoBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOrder()
			tt.change(&o)
			_, err := orderRequest(o, 1)
			require.Error(t, err)
			require.ErrorIs(t, err, models.ErrSourcingFailed)
			var me *models.Error
			require.True(t, errors.As(err, &me))
			assert.Equal(t, tt.reason, me.Message)
		})
	}
}

func TestOrderRequestBugsAreNotRefusals(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		attempt int
	}{
		{"no order id", "", 1},
		{"attempt zero", "ord_0123456789abcdefghijklmn", 0},
		{"key over 36 characters", "ord_0123456789abcdefghijklmnopqrst", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOrder()
			o.ID = tt.id
			_, err := orderRequest(o, tt.attempt)
			require.Error(t, err)
			assert.NotErrorIs(t, err, models.ErrSourcingFailed, "our bug must not fail the customer's order")
		})
	}
}

func TestRefusalReason(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		code    string
		details string
		want    string
		refusal bool
	}{
		{"out of stock", 422, "out_of_stock", "", models.FulfilmentFailureReason("product_out_of_stock"), true},
		{"address", 422, "invalid_shipping_address", `{"shipping_address.postal_code":"bad"}`, "The retailer refused the shipping address.", true},
		{"unsupported retailer", 400, "unsupported_retailer", "", models.FulfilmentFailureReason("retailer_not_supported"), true},
		{"unsupported country", 422, "unsupported_country", "", models.FulfilmentFailureReason("shipping_unavailable"), true},
		{"variant", 422, "invalid_variant", "", models.FulfilmentFailureReason("product_variant_unavailable"), true},
		{"unreachable", 422, "url_unreachable", "", models.FulfilmentFailureReason("invalid_product_url"), true},
		{"shipping", 422, "shipping_unavailable", "", models.FulfilmentFailureReason("shipping_unavailable"), true},
		{"validation naming the address", 422, "validation_error", `{"shipping_address.phone_number":"required"}`, "The retailer refused the shipping address.", true},
		{"validation", 422, "validation_error", `{"products":"At least one product is required"}`, msgDetailsRefused, true},
		{"bad request", 400, "bad_request", "", msgDetailsRefused, true},
		{"not found", 404, "not_found", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := refusalReason(&APIError{HTTPStatus: tt.status, Code: tt.code, Details: json.RawMessage(tt.details)})
			assert.Equal(t, tt.refusal, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPlacedBy(t *testing.T) {
	o := Order{Metadata: map[string]any{MetaOrderID: "ord_a", MetaAttempt: float64(2)}}
	assert.True(t, placedBy(o, "ord_a", 2))
	assert.False(t, placedBy(o, "ord_a", 1))
	assert.False(t, placedBy(o, "ord_b", 2))
	assert.True(t, placedBy(Order{Metadata: map[string]any{MetaOrderID: "ord_a", MetaAttempt: "3"}}, "ord_a", 3))
	assert.False(t, placedBy(Order{}, "ord_a", 1))
}

func TestParseTime(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2026-03-03T21:40:00Z", "2026-03-03T21:40:00Z"},
		{"2026-03-03T21:40:00+02:00", "2026-03-03T19:40:00Z"},
		{"2026-03-03T21:40:00.123456", "2026-03-03T21:40:00.123456Z"},
		{"2026-03-03 21:40:00", "2026-03-03T21:40:00Z"},
	}
	for _, tt := range tests {
		assert.Equal(t, at(tt.want), parseTime(tt.in), tt.in)
	}
	assert.True(t, parseTime("03/03/2026").IsZero())
}
