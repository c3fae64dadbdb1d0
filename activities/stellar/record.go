package stellar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// record is the part of a Horizon operation record (from the payments
// endpoint, with join=transactions) the watcher reads. Amounts stay
// strings until parsed as decimals: never a float.
type record struct {
	ID                    string       `json:"id"`
	PagingToken           string       `json:"paging_token"`
	TransactionSuccessful *bool        `json:"transaction_successful"`
	Type                  string       `json:"type"`
	CreatedAt             string       `json:"created_at"`
	TransactionHash       string       `json:"transaction_hash"`
	AssetType             string       `json:"asset_type"`
	AssetCode             string       `json:"asset_code"`
	AssetIssuer           string       `json:"asset_issuer"`
	From                  string       `json:"from"`
	FromMuxed             string       `json:"from_muxed"`
	To                    string       `json:"to"`
	ToMuxedID             string       `json:"to_muxed_id"`
	Amount                string       `json:"amount"`
	Transaction           *transaction `json:"transaction"`
	// Account and Into are an account_merge's merged account and
	// destination; its record has no amount (see mergedIn).
	Account string `json:"account"`
	Into    string `json:"into"`
	// Funder and StartingBalance are a create_account's: the XLM it
	// moved to the new account (Account).
	Funder          string `json:"funder"`
	StartingBalance string `json:"starting_balance"`
}

// transaction is the joined transaction of a record.
type transaction struct {
	Hash       string `json:"hash"`
	Successful *bool  `json:"successful"`
	MemoType   string `json:"memo_type"`
	Memo       string `json:"memo"`
	// InnerTransaction is a fee bump's inner transaction.
	InnerTransaction *struct {
		Hash string `json:"hash"`
	} `json:"inner_transaction"`
}

// page is a Horizon collection page. Its _links are deliberately not read:
// the next page is always built from the last paging token, so a proxy
// rewriting links cannot send the watcher to another host.
type page struct {
	Embedded struct {
		Records []record `json:"records"`
	} `json:"_embedded"`
}

// errBadRecord marks a record the watcher cannot turn into a payment
// although it must count it. Skipping it could lose a customer's money, so
// the watcher alerts and retries instead of moving past it.
var errBadRecord = errors.New("unusable Horizon record")

// creditedTypes are the operation types that move an asset into the
// destination account with a memo-carrying transaction. create_account and
// account_merge also move XLM but are not customer payments.
var creditedTypes = map[string]bool{
	"payment":                     true,
	"path_payment_strict_receive": true,
	"path_payment_strict_send":    true,
}

// converter turns records into payments for one network and account.
type converter struct {
	network    string
	account    string
	usdcIssuer string
}

// payment returns the payment a record credits to the account, or false if
// the record does not credit it (another type, a failed transaction, an
// outgoing or self payment). It fails, wrapping errBadRecord, only for a
// record that does credit the account but cannot be read.
func (c converter) payment(r record) (models.Payment, bool, error) {
	if r.PagingToken == "" {
		return models.Payment{}, false, fmt.Errorf("%w: record %q has no paging_token", errBadRecord, r.ID)
	}
	if !creditedTypes[r.Type] || r.To != c.account || r.From == c.account {
		return models.Payment{}, false, nil
	}
	if !successful(r) {
		return models.Payment{}, false, nil
	}
	bad := func(format string, args ...any) (models.Payment, bool, error) {
		return models.Payment{}, false, fmt.Errorf("%w: operation %s: %s", errBadRecord, r.ID, fmt.Sprintf(format, args...))
	}
	if r.ID == "" {
		return bad("no id")
	}
	if r.Transaction == nil {
		// Without the joined transaction there is no memo, and a payment
		// without its memo cannot be matched to its order.
		return bad("no joined transaction")
	}
	amount, err := models.StellarAmount(r.Amount)
	if err != nil {
		return bad("amount %q: %v", r.Amount, err)
	}
	// StellarAmount accepts zero ("0", "0.0000000"). The network refuses
	// payments of zero (*_MALFORMED), and one would credit nothing, so it
	// is skipped like any record that credits nothing, rather than
	// stopping the watcher as an unreadable record would. Found by
	// FuzzPaymentRecord (testdata/fuzz/FuzzPaymentRecord).
	if !amount.IsPositive() {
		return models.Payment{}, false, nil
	}
	asset, err := c.asset(r)
	if err != nil {
		return bad("%v", err)
	}
	at, err := time.Parse(time.RFC3339, r.CreatedAt)
	if err != nil {
		return bad("created_at %q: %v", r.CreatedAt, err)
	}
	memoType := r.Transaction.MemoType
	if memoType == "" {
		memoType = "none"
	}
	return models.Payment{
		ID:         "stellar:" + c.network + ":" + r.ID,
		Mode:       models.ModeLive,
		Asset:      asset,
		Amount:     amount,
		Memo:       noNUL(r.Transaction.Memo),
		MemoType:   noNUL(memoType),
		Sender:     payer(r),
		TxHash:     noNUL(r.TransactionHash),
		ReceivedAt: at.UTC(),
	}, true, nil
}

// mergedIn reports whether r is a successful account_merge into the
// account: the merged account's XLM, all of it, lands in the account with
// no payment record carrying its amount (Horizon puts it in the
// operation's account_credited effect).
func (c converter) mergedIn(r record) bool {
	return r.Type == "account_merge" && r.Into == c.account && r.Account != c.account && successful(r)
}

// merge is the payment a merge into the account (mergedIn) makes, of
// amount, the XLM its effects credit. It is recorded without a memo, so
// it is never matched to an order: it is money no one asked for, left to
// an operator like any unmatched payment (AlertAccountMerge).
func (c converter) merge(r record, amount decimal.Decimal) (models.Payment, error) {
	if r.ID == "" {
		return models.Payment{}, fmt.Errorf("%w: account_merge %q has no id", errBadRecord, r.PagingToken)
	}
	at, err := time.Parse(time.RFC3339, r.CreatedAt)
	if err != nil {
		return models.Payment{}, fmt.Errorf("%w: operation %s: created_at %q: %v", errBadRecord, r.ID, r.CreatedAt, err)
	}
	return models.Payment{
		ID:         "stellar:" + c.network + ":" + r.ID,
		Mode:       models.ModeLive,
		Asset:      "XLM",
		Amount:     amount,
		MemoType:   "none",
		Sender:     noNUL(r.Account),
		TxHash:     noNUL(r.TransactionHash),
		ReceivedAt: at.UTC(),
	}, nil
}

// payer is who paid: the muxed account (M…) when the payment came from
// one, else the account. A custodian (an exchange) pays from one pooled
// account and names its customer by the muxed id; the M… address keeps
// that id, so a refund to it reaches the same customer, while the G…
// account it is a form of stays derivable (models.RefundAccount). A
// from_muxed that is not a form of from is not trusted.
func payer(r record) string {
	if r.FromMuxed != "" && models.RefundAccount(r.FromMuxed) == r.From {
		return r.FromMuxed
	}
	return noNUL(r.From)
}

// noNUL replaces NUL characters, which a text memo may hold but Postgres
// text cannot: a payment must be storable whatever its memo says, or one
// odd payment would stop the watcher. (Such a memo names no order; the
// payment is kept for an operator.) encoding/json has already replaced
// invalid UTF-8.
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }

// successful reads the transaction's outcome from the record, or from the
// joined transaction if the record lacks it; unknown counts as failed.
func successful(r record) bool {
	if r.TransactionSuccessful != nil {
		return *r.TransactionSuccessful
	}
	return r.Transaction != nil && r.Transaction.Successful != nil && *r.Transaction.Successful
}

// asset names the received asset as models.Payment does: "XLM", "USDC"
// only for the accepted issuer's USDC, and CODE:ISSUER for anything else,
// which is recorded but never credited to an order.
func (c converter) asset(r record) (string, error) {
	switch r.AssetType {
	case "native":
		return "XLM", nil
	case "credit_alphanum4", "credit_alphanum12":
		if r.AssetCode == "" || r.AssetIssuer == "" {
			return "", fmt.Errorf("credit asset without code or issuer")
		}
		if r.AssetCode == "USDC" && r.AssetIssuer == c.usdcIssuer {
			return "USDC", nil
		}
		return noNUL(r.AssetCode + ":" + r.AssetIssuer), nil
	default:
		return "", fmt.Errorf("unknown asset_type %q", r.AssetType)
	}
}

// tokenAfter reports whether paging token a comes after b. Horizon's
// operation tokens are int64 ids; comparing them as strings would put
// "10" before "9".
func tokenAfter(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return x > y
	}
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
