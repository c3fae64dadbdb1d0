package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memocart/memocart/models"
)

// FuzzDecodeRequest feeds arbitrary bodies to the strict decoder for every
// request type the API reads. Properties: it never panics; a refusal is an
// invalid_request *models.Error whose field, if any, is a path into the
// body; an accepted body holds only valid UTF-8 without NUL in every
// string, no U+FFFD the body did not hold (encoding/json writes one for
// an escaped lone surrogate), and decodes to the same value with plain
// encoding/json (the strict rules only refuse, they never change a value).
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://www.amazon.com/dp/B0ZNC00001"}`,
		`{"items":[{"product_url":"https://www.ebay.com/itm/200000000001","quantity":2}],"ship_to_country":"US","ship_to_postal_code":"10001"}`,
		`{"cart_id":"crt_0123456789ABCDEFGHIJKLMN","customer_email":"a@b.co","payment_asset":"USDC","shipping_address":{"name":"Ada Lovelace","line1":"1 Main St","city":"New York","region":"NY","postal_code":"10001","country":"US","phone":"+12125550100"}}`,
		`{"amount":"12.50","asset":"USDC"}`,
		`{"amount":12.50}`,
		`{"amount":"1.00","amount":12345}`,
		`{"Amount":"1"}`,
		`{"url":"a\u0000b"}`,
		"{\"url\":\"\xff\"}",
		`{"items":[{"product_url":"x","quantity":1,"quantity":2}]}`,
		`{"shipping_address":{"name":"x","Name":"y"}}`,
		`{"a":{"b":{"c":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}}}`,
		`{} {}`,
		`[]`,
		`null`,
		``,
		`{"amount":1e400}`,
		`{"url":"\ud800"}`,
		`{"url":"\udc00"}`,
		`{"url":"\ud83d\ude00"}`,
		`{"url":"\ud83d\u0041"}`,
		`{"url":"\\ud800"}`,
		`{"url":"\ufffd"}`,
		`{"\ud800":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dst := range []any{&previewRequest{}, &cartRequest{}, &orderRequest{}, &testPaymentRequest{}} {
			err := decodeStrict(body, dst)
			if err != nil {
				var me *models.Error
				if !errors.As(err, &me) || me.Code != models.CodeInvalidRequest {
					t.Fatalf("%T: error %v is not invalid_request", dst, err)
				}
				if !utf8.ValidString(me.Message) || !utf8.ValidString(me.Field) {
					t.Fatalf("%T: error text is not valid UTF-8: %q %q", dst, me.Message, me.Field)
				}
				continue
			}
			if bad, ok := findBadString(reflect.ValueOf(dst)); ok {
				t.Fatalf("%T accepted with string %q", dst, bad)
			}
			if out, _ := json.Marshal(dst); bytes.ContainsRune(out, utf8.RuneError) &&
				!bytes.ContainsRune(body, utf8.RuneError) && !bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
				t.Fatalf("%T accepted with a U+FFFD the body does not hold: %s", dst, out)
			}
			plain := reflect.New(reflect.TypeOf(dst).Elem()).Interface()
			if err := json.Unmarshal(body, plain); err != nil {
				t.Fatalf("%T: strict accepted what encoding/json refuses: %v", dst, err)
			}
			if !reflect.DeepEqual(dst, plain) {
				t.Fatalf("%T: strict gives %+v, encoding/json %+v", dst, dst, plain)
			}
			// Cart items are decoded one by one with the same rules.
			if cr, ok := dst.(*cartRequest); ok {
				for _, raw := range cr.Items {
					var it cartItemRequest
					if err := decodeStrict(raw, &it); err == nil && it.ProductURL != nil &&
						(!utf8.ValidString(*it.ProductURL) || strings.ContainsRune(*it.ProductURL, 0)) {
						t.Fatalf("item accepted with product_url %q", *it.ProductURL)
					}
				}
			}
		}
	})
}

// findBadString returns a string inside v that is invalid UTF-8 or holds
// a NUL, looking through pointers, structs, slices and raw JSON.
func findBadString(v reflect.Value) (string, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return findBadString(v.Elem())
	case reflect.String:
		s := v.String()
		return s, !utf8.ValidString(s) || strings.ContainsRune(s, 0)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if s, bad := findBadString(v.Field(i)); bad {
				return s, true
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			var any any
			if json.Unmarshal(v.Bytes(), &any) == nil {
				return findBadString(reflect.ValueOf(&any))
			}
			return "", false
		}
		for i := 0; i < v.Len(); i++ {
			if s, bad := findBadString(v.Index(i)); bad {
				return s, true
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if s, bad := findBadString(k); bad {
				return s, true
			}
			if s, bad := findBadString(v.MapIndex(k)); bad {
				return s, true
			}
		}
	}
	return "", false
}
