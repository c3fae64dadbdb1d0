package stellar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memocart/memocart/models"
)

// DefaultMaxChainPayments bounds the payment operations ChainReader reads
// of one account, so that a reconciliation ends, in memory and time,
// whatever the history holds.
const DefaultMaxChainPayments = 1_000_000

// ChainConfig configures a ChainReader. Zero RequestTimeout and
// MaxPayments take their defaults (30 s, DefaultMaxChainPayments).
type ChainConfig struct {
	HorizonURL string // e.g. https://horizon.stellar.org
	Network    string // "pubnet" or "testnet": part of payment ids
	USDCIssuer string // the accepted USDC issuer
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// MaxPayments bounds the operations read per account: beyond it,
	// Chain fails rather than compare part of a history.
	MaxPayments int
}

// ChainReader reads what the network shows of the service's accounts
// for memocart reconcile (models.Chain), from Horizon's payments of each
// account.
type ChainReader struct {
	cfg  ChainConfig
	base string
	hc   *http.Client
}

// NewChainReader checks cfg and returns a reader; hc nil is a default
// client.
func NewChainReader(cfg ChainConfig, hc *http.Client) (*ChainReader, error) {
	u, err := url.Parse(cfg.HorizonURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("chain reader: HorizonURL %q: want an http(s) base URL without query", cfg.HorizonURL)
	}
	if cfg.Network != "pubnet" && cfg.Network != "testnet" {
		return nil, fmt.Errorf("chain reader: Network %q: want pubnet or testnet", cfg.Network)
	}
	if models.ValidateStellarAccount(cfg.USDCIssuer) != nil {
		return nil, fmt.Errorf("chain reader: USDCIssuer %q is not a valid Stellar account id", cfg.USDCIssuer)
	}
	if cfg.RequestTimeout < 0 || cfg.MaxPayments < 0 {
		return nil, errors.New("chain reader: RequestTimeout and MaxPayments must not be negative")
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MaxPayments == 0 {
		cfg.MaxPayments = DefaultMaxChainPayments
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &ChainReader{cfg: cfg, base: strings.TrimRight(cfg.HorizonURL, "/"), hc: hc}, nil
}

// Chain reads the payments crediting receiving (as the watcher records
// them: payments and path payments of successful transactions from any
// other account, and accounts merged into it with the XLM they credited)
// and, when payout is not empty, the payments leaving payout to any other
// account (and the XLM of accounts it created). An account merge of the
// payout account itself is not read: nothing is left to reconcile.
//
// Cost: each account's whole payments history, oldest first, 200
// operations per GET (join=transactions, for fee bumps' inner hashes and
// the watcher's conversion), plus one GET of effects per account merged
// into receiving; every successful payment is held in memory (about 300
// bytes each) for the comparison. At most MaxPayments operations per
// account: a longer history is an error, not a partial answer.
func (c *ChainReader) Chain(ctx context.Context, receiving, payout string) (models.Chain, error) {
	out := models.Chain{Receiving: receiving, Payout: payout}
	conv := converter{network: c.cfg.Network, account: receiving, usdcIssuer: c.cfg.USDCIssuer}
	get := func(ctx context.Context, u string, v any) error {
		return getJSON(ctx, c.hc, c.cfg.RequestTimeout, u, v)
	}
	err := c.payments(ctx, receiving, func(r record) error {
		p, ok, err := conv.payment(r)
		if err != nil {
			return err
		}
		if !ok && conv.mergedIn(r) {
			amount, known, err := mergeCredit(ctx, get, c.base, receiving, r)
			if err != nil || !known {
				return err // unknown: the watcher alerted it and recorded nothing
			}
			if p, err = conv.merge(r, amount); err != nil {
				return err
			}
			ok = true
		}
		if ok {
			cp := chainPayment(r, p.Asset)
			cp.ID, cp.Amount = p.ID, p.Amount
			out.Received = append(out.Received, cp)
		}
		return nil
	})
	if err != nil {
		return models.Chain{}, fmt.Errorf("reading the receiving account's payments: %w", err)
	}
	if payout == "" {
		return out, nil
	}
	conv = converter{network: c.cfg.Network, account: payout, usdcIssuer: c.cfg.USDCIssuer}
	err = c.payments(ctx, payout, func(r record) error {
		if r.Type == "create_account" && r.Funder == payout && r.Account != payout && successful(r) {
			// XLM out as a new account's starting balance: never a
			// refund's payout, listed all the same.
			r = record{ID: r.ID, TransactionHash: r.TransactionHash, Transaction: r.Transaction, Type: r.Type,
				From: r.Funder, To: r.Account, AssetType: "native", Amount: r.StartingBalance}
		} else if !creditedTypes[r.Type] || r.From != payout || r.To == payout || !successful(r) {
			return nil
		}
		amount, err := models.StellarAmount(r.Amount)
		if err != nil {
			return fmt.Errorf("%w: operation %s: amount %q: %v", errBadRecord, r.ID, r.Amount, err)
		}
		asset, err := conv.asset(r)
		if err != nil {
			return fmt.Errorf("%w: operation %s: %v", errBadRecord, r.ID, err)
		}
		cp := chainPayment(r, asset)
		cp.ID, cp.Amount = "stellar:"+c.cfg.Network+":"+r.ID, amount
		out.Paid = append(out.Paid, cp)
		return nil
	})
	if err != nil {
		return models.Chain{}, fmt.Errorf("reading the payout account's payments: %w", err)
	}
	return out, nil
}

// chainPayment is the parts of r every ChainPayment has.
func chainPayment(r record, asset string) models.ChainPayment {
	cp := models.ChainPayment{TxHash: strings.ToLower(r.TransactionHash), From: r.From, To: r.To, ToMuxedID: r.ToMuxedID, Asset: asset}
	if r.Type == "account_merge" {
		cp.From, cp.To = r.Account, r.Into
	}
	if t := r.Transaction; t != nil && t.InnerTransaction != nil {
		cp.InnerTxHash = strings.ToLower(t.InnerTransaction.Hash)
	}
	return cp
}

// payments hands each operation of account's payments history to each,
// oldest first, page after page (each page's cursor is the last record's
// paging token, never a link from the answer). An account Horizon does
// not know has no history.
func (c *ChainReader) payments(ctx context.Context, account string, each func(record) error) error {
	cursor, read := "", 0
	for {
		q := url.Values{"order": {"asc"}, "limit": {strconv.Itoa(DefaultPageLimit)}, "join": {"transactions"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p page
		err := getJSON(ctx, c.hc, c.cfg.RequestTimeout, c.base+"/accounts/"+url.PathEscape(account)+"/payments?"+q.Encode(), &p)
		var he *httpError
		if errors.As(err, &he) && he.Status == http.StatusNotFound && cursor == "" {
			return nil
		}
		if err != nil {
			return err
		}
		recs := p.Embedded.Records
		from := cursor
		for _, r := range recs {
			if r.PagingToken == "" {
				return fmt.Errorf("%w: record %q has no paging_token", errBadRecord, r.ID)
			}
			if cursor != "" && !tokenAfter(r.PagingToken, cursor) {
				continue // a record served twice is counted once
			}
			if err := each(r); err != nil {
				return err
			}
			cursor = r.PagingToken
		}
		read += len(recs)
		if len(recs) < DefaultPageLimit {
			return nil
		}
		if cursor == from {
			return fmt.Errorf("%w: a full page after %q holds nothing after it", errBadRecord, from)
		}
		if read >= c.cfg.MaxPayments {
			return fmt.Errorf("the history holds more than %d operations: reconcile reads at most that many", c.cfg.MaxPayments)
		}
	}
}
