package stellar

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/models"
)

// FuzzPaymentRecord feeds the raw JSON of one Horizon payment record
// through the watcher's decoding (as a streamed event, and inside a page)
// and converter.payment, configured as the tests configure it. It checks
// that nothing panics, that both decodings agree, that a record is either
// credited, skipped or refused as errBadRecord, and that a credited payment
// is well formed: a positive amount of whole stroops, the record's id, an
// asset name the converter hands out, and clean text.
//
// Seeds are the records horizontest renders for the payments the
// package's tests use (with the server's random URL replaced by a fixed
// one, so seeds are stable), compact variants of them, and the malformed
// records of TestConverterBadRecords; testdata/fuzz/FuzzPaymentRecord holds
// what fuzzing found.
func FuzzPaymentRecord(f *testing.F) {
	for _, s := range paymentRecordSeeds(f) {
		f.Add(s)
	}
	conv := converter{network: "testnet", account: account, usdcIssuer: usdcIssuer}
	maxStroops := decimal.NewFromInt(math.MaxInt64)
	f.Fuzz(func(t *testing.T, raw []byte) {
		// The stream decodes each event's data on its own (watcher.go).
		var rec record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return
		}
		// A page decodes the same record inside _embedded.records
		// (horizon.go); both must see the same thing.
		wrapped := append(append([]byte(`{"_embedded":{"records":[`), raw...), "]}}"...)
		var p page
		if err := json.NewDecoder(io.LimitReader(bytes.NewReader(wrapped), maxPageSize)).Decode(&p); err != nil {
			t.Fatalf("record decodes alone but not in a page: %v", err)
		}
		if len(p.Embedded.Records) != 1 || !reflect.DeepEqual(p.Embedded.Records[0], rec) {
			t.Fatalf("page decoding gives %+v, stream decoding %+v", p.Embedded.Records, rec)
		}

		pay, ok, err := conv.payment(rec)
		if err != nil {
			if !errors.Is(err, errBadRecord) {
				t.Fatalf("error %v does not wrap errBadRecord", err)
			}
			if ok || !reflect.DeepEqual(pay, models.Payment{}) {
				t.Fatalf("error %v with ok=%v, payment %+v", err, ok, pay)
			}
			return
		}
		if !ok {
			if !reflect.DeepEqual(pay, models.Payment{}) {
				t.Fatalf("skipped record with payment %+v", pay)
			}
			// Skipped: it must be one of the records that do not credit
			// the account, or a payment of zero (which credits nothing).
			zero, zerr := models.StellarAmount(rec.Amount)
			if creditedTypes[rec.Type] && rec.To == account && rec.From != account && successful(rec) &&
				(zerr != nil || !zero.IsZero()) {
				t.Fatalf("incoming successful %s record skipped: %+v", rec.Type, rec)
			}
			return
		}
		checkPayment(t, rec, pay, maxStroops)
	})
}

// checkPayment checks a payment converter.payment credited for rec.
func checkPayment(t *testing.T, rec record, pay models.Payment, maxStroops decimal.Decimal) {
	t.Helper()
	if rec.PagingToken == "" || rec.ID == "" || pay.ID != "stellar:testnet:"+rec.ID {
		t.Fatalf("payment id %q for record id %q, paging token %q", pay.ID, rec.ID, rec.PagingToken)
	}
	if !creditedTypes[rec.Type] || rec.To != account || rec.From == account || !successful(rec) {
		t.Fatalf("record credited although it does not credit the account: %+v", rec)
	}
	if pay.Mode != models.ModeLive || pay.OrderID != "" {
		t.Fatalf("payment mode %q, order %q", pay.Mode, pay.OrderID)
	}
	// Stellar amounts are positive int64 counts of stroops (10⁻⁷).
	stroops := pay.Amount.Shift(7)
	if !pay.Amount.IsPositive() || !stroops.IsInteger() || stroops.GreaterThan(maxStroops) {
		t.Fatalf("amount %s (from %q) is not a positive whole number of stroops", pay.Amount, rec.Amount)
	}
	credit := rec.AssetType == "credit_alphanum4" || rec.AssetType == "credit_alphanum12"
	switch pay.Asset {
	case "XLM":
		if rec.AssetType != "native" {
			t.Fatalf("XLM from asset_type %q", rec.AssetType)
		}
	case "USDC":
		if !credit || rec.AssetCode != "USDC" || rec.AssetIssuer != usdcIssuer {
			t.Fatalf("accepted USDC from %q %q %q", rec.AssetType, rec.AssetCode, rec.AssetIssuer)
		}
	default:
		// Any other asset is CODE:ISSUER, never credited to an order.
		if !credit || rec.AssetCode == "" || rec.AssetIssuer == "" ||
			pay.Asset != noNUL(rec.AssetCode+":"+rec.AssetIssuer) ||
			rec.AssetCode == "USDC" && rec.AssetIssuer == usdcIssuer {
			t.Fatalf("asset %q from %q %q %q", pay.Asset, rec.AssetType, rec.AssetCode, rec.AssetIssuer)
		}
	}
	if pay.Memo != noNUL(rec.Transaction.Memo) || pay.MemoType == "" ||
		rec.Transaction.MemoType != "" && pay.MemoType != noNUL(rec.Transaction.MemoType) {
		t.Fatalf("memo %q (%s) from %q (%s)", pay.Memo, pay.MemoType, rec.Transaction.Memo, rec.Transaction.MemoType)
	}
	if pay.Sender != noNUL(rec.From) || pay.TxHash != noNUL(rec.TransactionHash) {
		t.Fatalf("sender %q, tx %q from %q, %q", pay.Sender, pay.TxHash, rec.From, rec.TransactionHash)
	}
	if pay.ReceivedAt.Location() != time.UTC {
		t.Fatalf("received at %v, not UTC", pay.ReceivedAt)
	}
	// encoding/json only produces valid UTF-8 (it replaces invalid bytes
	// and lone surrogates with U+FFFD), and the converter replaces NUL
	// (Horizon may escape one as \u0000; see the nul-memo seed), so every
	// text field is storable in Postgres.
	for _, s := range []string{pay.ID, pay.Asset, pay.Memo, pay.MemoType, pay.Sender, pay.TxHash} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			t.Fatalf("payment %+v holds invalid UTF-8 %q", pay, s)
		}
	}
}

// paymentRecordSeeds returns the seed records.
func paymentRecordSeeds(f *testing.F) [][]byte {
	f.Helper()
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	other := horizontest.AccountID("someone else")
	rendered := renderRecords(f, []horizontest.Payment{
		// TestWhichRecordsCount.
		{From: sender, To: account, Amount: "12.5000000", MemoType: "text", Memo: "12345678901", TxHash: "t1", CreatedAt: at},
		{From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: "0.0000001", MemoType: "id", Memo: "12345678901", TxHash: "t2", CreatedAt: at},
		{From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: fakeIssuer, Amount: "5.0000000", MemoType: "hash", Memo: "q83vEjRWeJA=", TxHash: "t3", CreatedAt: at},
		{Type: "path_payment_strict_receive", From: sender, To: account, Amount: "10.0000000", SourceAmount: "55.1234567", TxHash: "t4", CreatedAt: at},
		{Type: "path_payment_strict_send", From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: "9.9900000", SourceAmount: "100.0000000", MemoType: "return", Memo: "AAAA", TxHash: "t5", CreatedAt: at},
		{From: account, To: other, Amount: "1.0000000", CreatedAt: at},
		{From: account, To: account, Amount: "1.0000000", CreatedAt: at},
		{From: sender, To: account, Amount: "1.0000000", Successful: ptr(false), CreatedAt: at},
		{Type: "account_merge", From: other, To: account, CreatedAt: at},
		{Type: "create_account", From: sender, To: account, Amount: "100.0000000", CreatedAt: at},
		// TestConverterPayment and TestConverterBadRecords.
		{From: sender, To: account, AssetType: "credit_alphanum12", AssetCode: "MEMOCARTCOIN", AssetIssuer: usdcIssuer, Amount: "922337203685.4775807", MemoType: "text", Memo: "12345678901", CreatedAt: at},
		{From: sender, To: account, Amount: "1e3", MemoType: "text", Memo: "12345678901", CreatedAt: at},
		{From: sender, To: account, Amount: "-1.0000000", MemoType: "text", Memo: "12345678901", CreatedAt: at},
		{From: sender, To: account, Amount: "1.00000001", MemoType: "text", Memo: "12345678901", CreatedAt: at},
		{From: sender, To: account, AssetType: "liquidity_pool_shares", Amount: "1.0000000", CreatedAt: at},
		{From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", Amount: "1.0000000", CreatedAt: at},
	})
	seeds := append([][]byte{}, rendered...)

	// Compact records, as the converter reads them, varied one field at
	// a time: small inputs the fuzzer mutates faster than full renders.
	base := func() map[string]any {
		return map[string]any{
			"id": "4294971393", "paging_token": "4294971393", "transaction_successful": true,
			"type": "payment", "created_at": "2025-03-04T05:06:07Z", "transaction_hash": "abc",
			"asset_type": "native", "from": sender, "to": account, "amount": "10.0000000",
			"transaction": map[string]any{"hash": "abc", "successful": true, "memo_type": "text", "memo": "12345678901"},
		}
	}
	tx := func(m map[string]any) map[string]any { return m["transaction"].(map[string]any) }
	for _, change := range []func(m map[string]any){
		func(map[string]any) {},
		func(m map[string]any) { m["amount"] = "" },
		func(m map[string]any) { m["amount"] = "0.0000000" }, // refused since FuzzPaymentRecord found it
		func(m map[string]any) { delete(m, "transaction") },
		func(m map[string]any) { m["created_at"] = "yesterday" },
		func(m map[string]any) { m["id"] = "" },
		func(m map[string]any) { delete(m, "paging_token") },
		func(m map[string]any) { m["paging_token"], m["type"] = "", "create_account" },
		func(m map[string]any) { m["transaction_successful"] = nil },
		func(m map[string]any) { m["transaction_successful"], tx(m)["successful"] = nil, nil },
		func(m map[string]any) { tx(m)["memo_type"], tx(m)["memo"] = "", "" },
		func(m map[string]any) { tx(m)["memo"] = "12345678901\x00" }, // nul-memo: see checkPayment
		func(m map[string]any) {
			m["asset_type"], m["asset_code"], m["asset_issuer"] = "credit_alphanum4", "USDC", usdcIssuer
		},
		func(m map[string]any) {
			m["asset_type"], m["asset_code"], m["asset_issuer"] = "credit_alphanum4", "USDC", fakeIssuer
		},
	} {
		m := base()
		change(m)
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	// Raw invalid UTF-8 in the memo (json.Marshal would have replaced it).
	seeds = append(seeds, bytes.Replace(seeds[len(rendered)], []byte(`"memo":"12345678901"`), []byte("\"memo\":\"\xff\xfe1\""), 1))
	// Not records at all, and a record with an unpaired surrogate.
	seeds = append(seeds, []byte(`null`), []byte(`{}`), []byte(`[]`), []byte(`{"id":1}`),
		[]byte(`{"id":"1","paging_token":"1","type":"payment","to":"`+account+`","transaction":{"memo":"\ud800"}}`))
	return seeds
}

// renderRecords returns the joined records horizontest serves for ps, as
// raw JSON, with the server's URL replaced by a fixed one.
func renderRecords(f *testing.F, ps []horizontest.Payment) [][]byte {
	f.Helper()
	srv := horizontest.New(account)
	defer srv.Close()
	for _, p := range ps {
		srv.AddPayment(p)
	}
	resp, err := http.Get(srv.URL + "/accounts/" + account + "/payments?join=transactions&limit=200")
	if err != nil {
		f.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var pg struct {
		Embedded struct {
			Records []json.RawMessage `json:"records"`
		} `json:"_embedded"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pg); err != nil {
		f.Fatal(err)
	}
	if len(pg.Embedded.Records) != len(ps) {
		f.Fatalf("horizontest served %d records, want %d", len(pg.Embedded.Records), len(ps))
	}
	out := make([][]byte, len(ps))
	for i, r := range pg.Embedded.Records {
		out[i] = []byte(strings.ReplaceAll(string(r), srv.URL, "https://horizon-testnet.stellar.org"))
	}
	return out
}
