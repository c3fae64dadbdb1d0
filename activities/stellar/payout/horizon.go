package payout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memocart/memocart/activities/upstream"
)

// maxBody bounds what is read of a Horizon answer: an account, a
// transaction or a problem, XDR included, is a few kilobytes.
const maxBody = 1 << 20

// maxRetryAfter caps a Retry-After header, so a wrong one cannot park
// payouts for hours.
const maxRetryAfter = 10 * time.Minute

// HorizonError is an answer from Horizon that is neither the resource
// asked for nor a transaction result: a rate limit, an overloaded or
// failing server. Retrying later may succeed; RetryAfter is the server's
// hint (from Retry-After), 0 if it gave none.
type HorizonError struct {
	Status     int
	Type       string // problem type, e.g. https://stellar.org/horizon-errors/rate_limit_exceeded
	Detail     string
	RetryAfter time.Duration
}

// RetryDelay is the server's hint, for the refund activities' payer port
// (activities.RetryDelayer): a payout waits that long before its retry.
func (e *HorizonError) RetryDelay() time.Duration { return e.RetryAfter }

func (e *HorizonError) Error() string {
	msg := fmt.Sprintf("payout: horizon answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Type != "" {
		msg += " (" + e.Type + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.RetryAfter > 0 {
		msg += "; retry after " + e.RetryAfter.String()
	}
	return msg
}

// errNotFound is Horizon's 404: no such account or transaction.
var errNotFound = errors.New("not found")

// problem is Horizon's error body (RFC 7807), with the extras of
// transaction_failed.
type problem struct {
	Type   string `json:"type"`
	Detail string `json:"detail"`
	Extras struct {
		ResultCodes *struct {
			Transaction string   `json:"transaction"`
			Operations  []string `json:"operations"`
		} `json:"result_codes"`
		ResultXDR string `json:"result_xdr"`
	} `json:"extras"`
}

// transactionFailed reports whether the problem is a transaction result
// (400 transaction_failed), as opposed to a malformed request.
func (p problem) transactionFailed() bool {
	return strings.HasSuffix(p.Type, "/transaction_failed") && p.Extras.ResultCodes != nil
}

// horizonError turns a non-2xx answer and its body into a *HorizonError.
func horizonError(status int, header http.Header, body []byte, now time.Time) *HorizonError {
	e := &HorizonError{Status: status, RetryAfter: retryAfter(header.Get("Retry-After"), now)}
	var p problem
	if json.Unmarshal(body, &p) == nil {
		e.Type, e.Detail = p.Type, p.Detail
	}
	return e
}

// retryAfter is a Retry-After header's wait (upstream.RetryAfter), capped
// at maxRetryAfter.
func retryAfter(v string, now time.Time) time.Duration {
	return min(upstream.RetryAfter(v, now), maxRetryAfter)
}

// transportError drops the URL from a client error: URLs name accounts,
// which errors and logs must not carry.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("payout: horizon %s request: %w", ue.Op, ue.Err)
	}
	return fmt.Errorf("payout: horizon request: %w", err)
}

// getJSON GETs path from Horizon and decodes a 200 answer into out, within
// the per-request timeout, and returns the answer's header. A 404 is
// errNotFound; another answer is a *HorizonError.
func (p *Payer) getJSON(ctx context.Context, path string, out any) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, p.requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("payout: building a horizon request: %w", err)
	}
	req.Header.Set("Accept", "application/hal+json, application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, transportError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, transportError(err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return resp.Header, errNotFound
	default:
		return resp.Header, horizonError(resp.StatusCode, resp.Header, body, p.now())
	}
	if err := json.Unmarshal(body, out); err != nil {
		return resp.Header, fmt.Errorf("payout: decoding a horizon answer: %w", err)
	}
	return resp.Header, nil
}

// post submits a base64 envelope (POST /transactions, form tx=...) within
// the submission timeout, which is longer than Horizon's own wait for the
// ledger (it answers 504 after about 30 seconds).
func (p *Payer) post(ctx context.Context, envelope string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.submitTimeout)
	defer cancel()
	form := url.Values{"tx": {envelope}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/transactions", strings.NewReader(form))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("payout: building a horizon request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/hal+json, application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, nil, nil, transportError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, nil, transportError(err)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// accountBody is what Payer reads of Horizon's account resource.
type accountBody struct {
	Sequence string            `json:"sequence"`
	Balances []balanceBody     `json:"balances"`
	Data     map[string]string `json:"data"` // data entries, values base64
}

type balanceBody struct {
	Balance      string `json:"balance"`
	AssetType    string `json:"asset_type"`
	AssetCode    string `json:"asset_code"`
	AssetIssuer  string `json:"asset_issuer"`
	IsAuthorized *bool  `json:"is_authorized"`
}

// account GETs the account resource of id (a G… account).
func (p *Payer) account(ctx context.Context, id string) (accountBody, error) {
	acc, _, err := p.accountAt(ctx, id)
	return acc, err
}

// accountAt GETs the account resource of id and the ledger it is as of:
// Horizon's Latest-Ledger header, 0 if the answer has none.
func (p *Payer) accountAt(ctx context.Context, id string) (accountBody, int64, error) {
	var acc accountBody
	header, err := p.getJSON(ctx, "/accounts/"+url.PathEscape(id), &acc)
	if err != nil {
		return acc, 0, err
	}
	latest, perr := strconv.ParseInt(header.Get("Latest-Ledger"), 10, 64)
	if perr != nil || latest <= 0 {
		latest = 0
	}
	return acc, latest, nil
}

// txBody is what Payer reads of Horizon's transaction resource, which is
// also the body of a successful submission and a record of an account's
// transactions.
type txBody struct {
	Hash           string `json:"hash"`
	Successful     bool   `json:"successful"`
	ResultXDR      string `json:"result_xdr"`
	PagingToken    string `json:"paging_token"`
	SourceAccount  string `json:"source_account"`
	SourceSequence string `json:"source_account_sequence"`
	// InnerTransaction is a fee bump's inner transaction; Hash is then
	// the fee bump's own.
	InnerTransaction *struct {
		Hash string `json:"hash"`
	} `json:"inner_transaction"`
}

// is reports whether the transaction is hash, or a fee bump of it.
func (b txBody) is(hash string) bool {
	return strings.EqualFold(b.Hash, hash) || (b.InnerTransaction != nil && strings.EqualFold(b.InnerTransaction.Hash, hash))
}

// ledgerClosedAt GETs ledger seq's close time.
func (p *Payer) ledgerClosedAt(ctx context.Context, seq int64) (time.Time, error) {
	var l struct {
		ClosedAt time.Time `json:"closed_at"`
	}
	_, err := p.getJSON(ctx, "/ledgers/"+strconv.FormatInt(seq, 10), &l)
	if err == nil && l.ClosedAt.IsZero() {
		err = errors.New("payout: horizon sent a ledger without its close time")
	}
	return l.ClosedAt, err
}

// maxHistoryPages bounds the pages of the payout account's transactions
// read to find which one used a sequence number: a payout is settled
// within minutes, long before a thousand more transactions.
const maxHistoryPages = 5

// sequenceUser finds, in account's history (failed transactions
// included), its transaction with sequence number seq. found
// is false when that history, as the instances that answered know it,
// shows none: the number may be unused yet, or used in a ledger they have
// not ingested.
func (p *Payer) sequenceUser(ctx context.Context, account string, seq int64) (tx txBody, found bool, err error) {
	cursor := ""
	for range maxHistoryPages {
		var page struct {
			Embedded struct {
				Records []txBody `json:"records"`
			} `json:"_embedded"`
		}
		q := url.Values{"order": {"desc"}, "limit": {"200"}, "include_failed": {"true"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if _, err := p.getJSON(ctx, "/accounts/"+url.PathEscape(account)+"/transactions?"+q.Encode(), &page); err != nil {
			if errors.Is(err, errNotFound) {
				return txBody{}, false, nil
			}
			return txBody{}, false, err
		}
		for _, r := range page.Embedded.Records {
			if r.SourceAccount != account {
				continue
			}
			n, err := strconv.ParseInt(r.SourceSequence, 10, 64)
			if err != nil {
				return txBody{}, false, errors.New("payout: horizon listed a transaction without a valid sequence number")
			}
			if n == seq {
				return r, true, nil
			}
			if n < seq {
				return txBody{}, false, nil
			}
		}
		recs := page.Embedded.Records
		if len(recs) == 0 {
			return txBody{}, false, nil
		}
		cursor = recs[len(recs)-1].PagingToken
	}
	return txBody{}, false, nil
}
