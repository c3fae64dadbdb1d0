package client

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// The client's half of the contract: api/openapi.json (../openapi.json
// from this module) is the service's, which the api tests hold the
// handlers to. These tests fail when the document gains an operation the
// client has no method for, or a schema gains, loses or renames a
// property, or changes whether one is required or nullable, so the client
// follows every change of the contract in the same commit.

// operation ties an operationId to its method and to the Go types of its
// JSON request body, query parameters and 2xx JSON answer (nil: none).
type operation struct {
	id, method             string
	request, query, answer any
}

var operations = []operation{
	{"getOpenAPIDocument", "GetOpenAPIDocument", nil, nil, json.RawMessage{}},
	{"previewProduct", "PreviewProduct", PreviewProductParams{}, nil, productEnvelope{}},
	{"createCart", "CreateCart", CreateCartParams{}, nil, cartEnvelope{}},
	{"getCart", "GetCart", nil, nil, cartEnvelope{}},
	{"listOrders", "ListOrders", nil, ListOrdersParams{}, OrderList{}},
	{"createOrder", "CreateOrder", CreateOrderParams{}, nil, createdOrderEnvelope{}},
	{"getOrder", "GetOrder", nil, nil, orderEnvelope{}},
	{"cancelOrder", "CancelOrder", CancelOrderParams{}, nil, orderEnvelope{}},
	{"setOrderRefundDestination", "SetOrderRefundDestination", RefundDestinationParams{}, nil, orderEnvelope{}},
	{"listRefunds", "ListRefunds", nil, ListRefundsParams{}, RefundList{}},
	{"getRefund", "GetRefund", nil, nil, refundEnvelope{}},
	{"createTestPayment", "CreateTestPayment", CreateTestPaymentParams{}, nil, testPaymentEnvelope{}},
	{"expireTestOrder", "ExpireTestOrder", nil, nil, orderEnvelope{}},
	{"advanceTestOrder", "AdvanceTestOrder", nil, nil, orderEnvelope{}},
	{"failTestOrder", "FailTestOrder", FailTestOrderParams{}, nil, orderEnvelope{}},
	{"failTestRefund", "FailTestRefund", FailTestRefundParams{}, nil, refundEnvelope{}},
	{"listEvents", "ListEvents", nil, ListEventsParams{}, EventList{}},
	{"getEvent", "GetEvent", nil, nil, Event{}},
	{"listWebhookEndpoints", "ListWebhookEndpoints", nil, nil, webhookEndpointsEnvelope{}},
	{"createWebhookEndpoint", "CreateWebhookEndpoint", CreateWebhookEndpointParams{}, nil, webhookEndpointEnvelope{}},
	{"getWebhookEndpoint", "GetWebhookEndpoint", nil, nil, webhookEndpointEnvelope{}},
	{"deleteWebhookEndpoint", "DeleteWebhookEndpoint", nil, nil, nil},
	{"listWebhookDeliveries", "ListWebhookDeliveries", nil, ListWebhookDeliveriesParams{}, deliveriesEnvelope{}},
	{"resendWebhookEvent", "ResendWebhookEvent", nil, nil, resendEnvelope{}},
}

// helpers are the exported methods of *Client built on the operations
// rather than being one.
var helpers = []string{"Orders", "Refunds", "Events", "EventsAfter", "WaitForOrderStatus"}

// openAPI is api/openapi.json, decoded.
type openAPI map[string]any

func loadOpenAPI(t *testing.T) openAPI {
	t.Helper()
	b, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// resolve follows a $ref ("#/components/schemas/Order") to what it names.
func (doc openAPI) resolve(t *testing.T, node map[string]any) map[string]any {
	t.Helper()
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		var cur any = map[string]any(doc)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("unresolvable $ref %s", ref)
			}
			cur = m[part]
		}
		if node, ok = cur.(map[string]any); !ok {
			t.Fatalf("unresolvable $ref %s", ref)
		}
	}
}

// v1Operations returns each operation under /v1 by its operationId.
func (doc openAPI) v1Operations(t *testing.T) map[string]map[string]any {
	ops := map[string]map[string]any{}
	for path, item := range doc["paths"].(map[string]any) {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		for method, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			id, _ := o["operationId"].(string)
			if id == "" {
				t.Errorf("%s %s has no operationId", method, path)
				continue
			}
			ops[id] = o
		}
	}
	return ops
}

// TestEveryOperationHasAMethod checks both ways that the client has a
// method for each /v1 operation of the document and no operation the
// document lacks, and that every exported method of *Client is in the
// operations table or the helpers.
func TestEveryOperationHasAMethod(t *testing.T) {
	ops := loadOpenAPI(t).v1Operations(t)
	client := reflect.TypeFor[*Client]()
	inTable := map[string]bool{}
	for _, op := range operations {
		inTable[op.id] = true
		inTable[op.method] = true
		if _, ok := ops[op.id]; !ok {
			t.Errorf("the client has %s for operation %s, which api/openapi.json does not have", op.method, op.id)
		}
		if _, ok := client.MethodByName(op.method); !ok {
			t.Errorf("operation %s: *Client has no method %s", op.id, op.method)
		}
	}
	for id := range ops {
		if !inTable[id] {
			t.Errorf("api/openapi.json has operation %s: give the client a method and a row in operations", id)
		}
	}
	for m := range client.Methods() {
		if !inTable[m.Name] && !slices.Contains(helpers, m.Name) {
			t.Errorf("*Client has %s, in neither operations nor helpers", m.Name)
		}
	}
}

// TestTypesMatchSchemas compares each operation's request body, query
// parameters and answer with the document's schemas, property by property
// and down every nested object.
func TestTypesMatchSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	ops := doc.v1Operations(t)
	for _, op := range operations {
		o, ok := ops[op.id]
		if !ok {
			continue // TestEveryOperationHasAMethod says so
		}
		t.Run(op.id, func(t *testing.T) {
			s := schemaChecker{t: t, doc: doc}
			var reqSchema map[string]any
			if rb, ok := o["requestBody"].(map[string]any); ok {
				reqSchema = jsonSchema(rb)
			}
			switch {
			case reqSchema == nil && op.request != nil:
				t.Errorf("the client sends a %T body; the operation takes no JSON body", op.request)
			case reqSchema != nil && op.request == nil:
				t.Errorf("the operation takes a JSON body; the client sends none")
			case reqSchema != nil:
				s.compare("request", reqSchema, reflect.TypeOf(op.request), false)
			}

			answers := 0
			for status, r := range o["responses"].(map[string]any) {
				if !strings.HasPrefix(status, "2") {
					continue
				}
				schema := jsonSchema(doc.resolve(t, r.(map[string]any)))
				if schema == nil {
					continue
				}
				answers++
				if op.answer == nil {
					t.Errorf("the %s answer has a JSON body; the client reads none", status)
					continue
				}
				s.compare("answer "+status, schema, reflect.TypeOf(op.answer), false)
			}
			if answers == 0 && op.answer != nil {
				t.Errorf("the client reads a %T; the operation answers no JSON body", op.answer)
			}

			var params []string
			for _, p := range o["parameters"].([]any) {
				p := doc.resolve(t, p.(map[string]any))
				if p["in"] == "query" {
					params = append(params, p["name"].(string))
				}
			}
			var fields []string
			if op.query != nil {
				for f := range reflect.TypeOf(op.query).Fields() {
					fields = append(fields, f.Tag.Get("query"))
				}
			}
			sort.Strings(params)
			sort.Strings(fields)
			if !slices.Equal(params, fields) {
				t.Errorf("query parameters: api/openapi.json has %v, the client %v", params, fields)
			}
		})
	}
}

// TestErrorAndEventSchemas checks the error envelope and the webhook
// delivery's body, which no operation's 2xx answer covers.
func TestErrorAndEventSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	s := schemaChecker{t: t, doc: doc}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	s.compare("Error", schemas["Error"].(map[string]any), reflect.TypeFor[errorEnvelope](), false)
	hook := doc["webhooks"].(map[string]any)["event"].(map[string]any)["post"].(map[string]any)
	s.compare("webhook", jsonSchema(hook["requestBody"].(map[string]any)), reflect.TypeFor[Event](), false)
}

// enums are the client's constants for the document's enumerations.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[OrderStatus](): {string(OrderCreated), string(OrderPaid), string(OrderOrdered), string(OrderShipped),
		string(OrderDelivered), string(OrderCancelled), string(OrderFailed)},
	reflect.TypeFor[PaymentStatus](): {string(PaymentPending), string(PaymentProcessing), string(PaymentPartial),
		string(PaymentConfirmed), string(PaymentOverpaid), string(PaymentExpired), string(PaymentCancelled),
		string(PaymentRefundDue), string(PaymentRefunded)},
	reflect.TypeFor[RefundStatus](): {string(RefundAwaitingDestination), string(RefundAwaitingApproval),
		string(RefundSending), string(RefundSent), string(RefundFailed), string(RefundCancelled)},
	reflect.TypeFor[EventType](): {string(EventOrderCreated), string(EventOrderPaid), string(EventOrderOrdered),
		string(EventOrderShipped), string(EventOrderDelivered), string(EventOrderCancelled), string(EventOrderFailed),
		string(EventPaymentReceived), string(EventPaymentPartial), string(EventPaymentOverpaid), string(EventPaymentLate),
		string(EventRefundCreated), string(EventRefundSent), string(EventRefundFailed)},
	reflect.TypeFor[ErrorCode](): {string(CodeMissingAPIKey), string(CodeInvalidAPIKey), string(CodeInvalidSignature),
		string(CodeInvalidRequest), string(CodeInvalidURL), string(CodePlanRequired), string(CodeTestModeOnly),
		string(CodeCartNotFound), string(CodeOrderNotFound), string(CodeRefundNotFound), string(CodeNotFound),
		string(CodeMethodNotAllowed), string(CodeCartAlreadyOrdered), string(CodeIdempotencyMismatch),
		string(CodeIdempotencyKeyInUse), string(CodeOrderNotCancellable), string(CodeInvalidOrderState), string(CodeInvalidRefundState),
		string(CodeUnsupportedMediaType), string(CodeProductUnavailable), string(CodeShippingUnavailable),
		string(CodeInvalidAddress), string(CodeInvalidEmail), string(CodeUnsupportedAsset),
		string(CodeInvalidRefundDestination), string(CodeRateLimited), string(CodeInternalError),
		string(CodeLiveModeUnavailable), string(CodeMarketplaceUnavailable), string(CodeRateUnavailable),
		string(CodeServiceUnavailable), string(CodeInvalidWebhookURL), string(CodeWebhookEndpointNotFound),
		string(CodeEventNotFound), string(CodeWebhookEndpointLimit), string(CodeWebhookEndpointDisabled)},
}

// TestEnumsMatchSchemas checks the constants of each enumeration against
// the document's named schema, both ways.
func TestEnumsMatchSchemas(t *testing.T) {
	schemas := loadOpenAPI(t)["components"].(map[string]any)["schemas"].(map[string]any)
	for name, typ := range map[string]reflect.Type{
		"OrderStatus":      reflect.TypeFor[OrderStatus](),
		"PaymentStatus":    reflect.TypeFor[PaymentStatus](),
		"RefundStatus":     reflect.TypeFor[RefundStatus](),
		"WebhookEventType": reflect.TypeFor[EventType](),
		"ErrorCode":        reflect.TypeFor[ErrorCode](),
	} {
		var want []string
		for _, v := range schemas[name].(map[string]any)["enum"].([]any) {
			want = append(want, v.(string))
		}
		got := slices.Clone(enums[typ])
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: api/openapi.json enumerates %v, the client's %s constants are %v", name, want, typ, got)
		}
	}
}

// jsonSchema returns the application/json schema of a request body or
// response object, nil when it has none.
func jsonSchema(bodyOrResponse map[string]any) map[string]any {
	content, _ := bodyOrResponse["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	return schema
}

// schemaChecker compares a schema with a Go type.
type schemaChecker struct {
	t   *testing.T
	doc openAPI
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	dateType    = reflect.TypeFor[Date]()
	decimalType = reflect.TypeFor[decimal.Decimal]()
	rawType     = reflect.TypeFor[json.RawMessage]()
)

// decimalPattern is how the document marks a decimal sent as a string.
const decimalPattern = `^[0-9]+(\.[0-9]+)?$`

// compare reports where typ does not read (and write) what schema
// describes. optional says the property may be absent, which (like
// null) a pointer stands for.
func (s schemaChecker) compare(at string, schema map[string]any, typ reflect.Type, optional bool) {
	t := s.t
	t.Helper()
	schema = s.doc.resolve(t, schema)
	if typ == rawType {
		return // kept as the service sent it
	}
	types, nullable := schemaTypes(schema)
	if alts, ok := schema["anyOf"].([]any); ok {
		var branches []map[string]any
		for _, a := range alts {
			b := s.doc.resolve(t, a.(map[string]any))
			if b["type"] == "null" {
				nullable = true
				continue
			}
			branches = append(branches, b)
		}
		if len(branches) == 1 {
			schema = branches[0]
			var n bool
			types, n = schemaTypes(schema)
			nullable = nullable || n
		} else {
			// One of several strings: a type or the const "*".
			types = []string{"string"}
			schema = map[string]any{"type": "string"}
		}
	}
	if typ.Kind() == reflect.Pointer {
		if !nullable && !optional {
			t.Errorf("%s: %s is a pointer, but the property is required and not nullable", at, typ)
		}
		typ = typ.Elem()
	} else if nullable && typ.Kind() != reflect.Map && typ.Kind() != reflect.Slice && !optional {
		t.Errorf("%s: the property is nullable; %s cannot hold null (use a pointer)", at, typ)
	}

	switch {
	case slices.Contains(types, "object"):
		props, ok := schema["properties"].(map[string]any)
		if !ok {
			if typ.Kind() != reflect.Map || typ.Key().Kind() != reflect.String || typ.Elem().Kind() != reflect.String {
				t.Errorf("%s: a map of strings in api/openapi.json, %s in the client", at, typ)
			}
			return
		}
		s.compareObject(at, schema, props, typ)
	case slices.Contains(types, "array"):
		if typ.Kind() != reflect.Slice {
			t.Errorf("%s: an array in api/openapi.json, %s in the client", at, typ)
			return
		}
		s.compare(at+"[]", schema["items"].(map[string]any), typ.Elem(), false)
	case slices.Contains(types, "number"), schema["pattern"] == decimalPattern:
		if typ != decimalType {
			t.Errorf("%s: an amount in api/openapi.json, %s in the client (use decimal.Decimal)", at, typ)
		}
	case schema["format"] == "date-time":
		if typ != timeType {
			t.Errorf("%s: a date-time in api/openapi.json, %s in the client (use time.Time)", at, typ)
		}
	case schema["format"] == "date":
		if typ != dateType {
			t.Errorf("%s: a date in api/openapi.json, %s in the client (use Date)", at, typ)
		}
	case slices.Contains(types, "string"):
		if typ.Kind() != reflect.String {
			t.Errorf("%s: a string in api/openapi.json, %s in the client", at, typ)
		}
		// A property may take a subset of an enumeration (a tracking
		// step is one of the happy path's statuses); each value it may
		// take needs a constant.
		if consts, ok := enums[typ]; ok {
			values, _ := schema["enum"].([]any)
			for _, v := range values {
				if !slices.Contains(consts, v.(string)) {
					t.Errorf("%s: api/openapi.json allows %q, which no %s constant is", at, v, typ)
				}
			}
		}
	case slices.Contains(types, "integer"):
		if typ.Kind() != reflect.Int {
			t.Errorf("%s: an integer in api/openapi.json, %s in the client", at, typ)
		}
	case slices.Contains(types, "boolean"):
		if typ.Kind() != reflect.Bool {
			t.Errorf("%s: a boolean in api/openapi.json, %s in the client", at, typ)
		}
	default:
		t.Errorf("%s: the check does not know the schema %v", at, schema)
	}
}

// compareObject checks a struct's JSON fields against an object's
// properties: the same names, each required one without omitempty (so it
// is always sent, and read as present), each optional one with it.
func (s schemaChecker) compareObject(at string, schema, props map[string]any, typ reflect.Type) {
	t := s.t
	if typ.Kind() != reflect.Struct {
		t.Errorf("%s: an object in api/openapi.json, %s in the client", at, typ)
		return
	}
	required := map[string]bool{}
	reqs, _ := schema["required"].([]any)
	for _, r := range reqs {
		required[r.(string)] = true
	}
	seen := map[string]bool{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			t.Errorf("%s: %s.%s has no JSON name", at, typ, f.Name)
			continue
		}
		seen[name] = true
		prop, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("%s: %s.%s is %q, which api/openapi.json does not have", at, typ, f.Name, name)
			continue
		}
		omitempty := strings.Contains(opts, "omitempty")
		if required[name] && omitempty {
			t.Errorf("%s: %q is required; %s.%s must not be omitempty", at, name, typ, f.Name)
		}
		if !required[name] && !omitempty {
			t.Errorf("%s: %q is optional; %s.%s must be omitempty", at, name, typ, f.Name)
		}
		s.compare(at+"."+name, prop, f.Type, !required[name])
	}
	for name := range props {
		if !seen[name] {
			req := "optional"
			if required[name] {
				req = "required"
			}
			t.Errorf("%s: api/openapi.json has the %s property %q; %s has no field for it", at, req, name, typ)
		}
	}
}

// schemaTypes returns a schema's types ("type" is a string or a list)
// without "null", and whether null is one of them.
func schemaTypes(schema map[string]any) ([]string, bool) {
	var types []string
	nullable := false
	add := func(v any) {
		if s, _ := v.(string); s == "null" {
			nullable = true
		} else if s != "" {
			types = append(types, s)
		}
	}
	switch v := schema["type"].(type) {
	case []any:
		for _, x := range v {
			add(x)
		}
	default:
		add(v)
	}
	return types, nullable
}
