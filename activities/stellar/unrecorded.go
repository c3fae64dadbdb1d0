package stellar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// Money that reaches the receiving account without a payment record: an
// account merged into it, and claimable balances naming it.

// claimablePageLimit bounds the claimable balances read per scan: one
// page of Horizon's largest. More than that unclaimed is an operator's
// matter already, and the next scans alert the rest once some are
// claimed.
const claimablePageLimit = 200

// effect is the part of a Horizon effect record merge reads.
type effect struct {
	Type      string `json:"type"`
	Account   string `json:"account"`
	AssetType string `json:"asset_type"`
	Amount    string `json:"amount"`
}

// merge returns the payment a merge into the account (converter.mergedIn)
// makes, with the XLM the operation's account_credited effect gives the
// account. When the operation's effects hold no such credit the amount
// cannot be known: it raises AlertAccountMerge naming the operation and
// returns false, recording nothing. An operation Horizon does not know
// (yet: a load-balanced instance may lag the one that served the record)
// is an unusable record, which the watcher stays on (errBadRecord); a
// failure to ask is an error, retried like a page.
func (r *run) merge(ctx context.Context, rec record) (models.Payment, bool, error) {
	w := r.w
	amount, ok, err := mergeCredit(ctx, w.getJSON, w.base, w.cfg.Account, rec)
	if err != nil {
		return models.Payment{}, false, err
	}
	if ok {
		p, err := w.conv.merge(rec, amount)
		return p, err == nil, err
	}
	w.log.ErrorContext(ctx, "account merged into the receiving account; its amount is unknown", slog.String("operation", rec.ID))
	w.alerts.Alert(ctx, AlertAccountMerge, fmt.Sprintf("%s account %s: account %s was merged into it (operation %s, transaction %s) but Horizon gives no amount it credited: not recorded; look the operation up and record its XLM by hand",
		w.cfg.Network, w.cfg.Account, rec.Account, rec.ID, rec.TransactionHash))
	return models.Payment{}, false, nil
}

// mergeCredit reads the XLM that account_merge rec credited account, from
// its account_credited effect; false when its effects hold none. An
// operation Horizon does not know is an unusable record (errBadRecord).
func mergeCredit(ctx context.Context, get func(ctx context.Context, u string, v any) error, base, account string, rec record) (decimal.Decimal, bool, error) {
	var body struct {
		Embedded struct {
			Records []effect `json:"records"`
		} `json:"_embedded"`
	}
	err := get(ctx, base+"/operations/"+url.PathEscape(rec.ID)+"/effects?"+url.Values{"limit": {"50"}}.Encode(), &body)
	var he *httpError
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		return decimal.Decimal{}, false, fmt.Errorf("%w: account_merge %s: Horizon does not know its effects: %v", errBadRecord, rec.ID, err)
	}
	if err != nil {
		return decimal.Decimal{}, false, fmt.Errorf("reading the effects of account_merge %s: %w", rec.ID, err)
	}
	for _, e := range body.Embedded.Records {
		if e.Type != "account_credited" || e.Account != account || e.AssetType != "native" {
			continue
		}
		amount, err := models.StellarAmount(e.Amount)
		if err != nil || !amount.IsPositive() {
			break
		}
		return amount, true, nil
	}
	return decimal.Decimal{}, false, nil
}

// claimableBalance is the part of a Horizon claimable balance the check
// reads.
type claimableBalance struct {
	ID      string `json:"id"`
	Asset   string `json:"asset"`
	Amount  string `json:"amount"`
	Sponsor string `json:"sponsor"`
}

// checkClaimable raises AlertClaimableBalance for each claimable balance
// naming the account as a claimant that this Run has not raised yet. A
// failure is logged, never returned: it must not stop payments being
// watched, and the next scan asks again.
func (r *run) checkClaimable(ctx context.Context) {
	w := r.w
	var body struct {
		Embedded struct {
			Records []claimableBalance `json:"records"`
		} `json:"_embedded"`
	}
	q := url.Values{"claimant": {w.cfg.Account}, "limit": {fmt.Sprint(claimablePageLimit)}, "order": {"asc"}}
	if err := w.getJSON(ctx, w.base+"/claimable_balances?"+q.Encode(), &body); err != nil {
		w.log.WarnContext(ctx, "cannot list the account's claimable balances; asking again at the next scan", slog.Any("error", err))
		return
	}
	for _, b := range body.Embedded.Records {
		if b.ID == "" || r.claimAlerted[b.ID] {
			continue
		}
		r.claimAlerted[b.ID] = true
		asset := b.Asset
		if asset == "native" {
			asset = "XLM"
		}
		w.log.WarnContext(ctx, "claimable balance waiting for the receiving account", slog.String("balance_id", b.ID))
		w.alerts.Alert(ctx, AlertClaimableBalance, fmt.Sprintf("%s account %s can claim %s %s (claimable balance %s, sponsor %s): not recorded as a payment until an operator claims it",
			w.cfg.Network, w.cfg.Account, noNUL(b.Amount), noNUL(asset), noNUL(b.ID), noNUL(b.Sponsor)))
	}
	if len(body.Embedded.Records) == claimablePageLimit {
		w.log.WarnContext(ctx, "more claimable balances than one page; the rest are raised as these are claimed", slog.Int("limit", claimablePageLimit))
	}
}

// getJSON GETs u (built from the configured base, never from a
// response's links) and decodes its JSON into v.
func (w *Watcher) getJSON(ctx context.Context, u string, v any) error {
	return getJSON(ctx, w.hc, w.cfg.RequestTimeout, u, v)
}

// getJSON GETs u within timeout and decodes its JSON into v; an answer
// other than 200 is an *httpError.
func getJSON(ctx context.Context, hc *http.Client, timeout time.Duration, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/hal+json, application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return readError(resp, time.Now())
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxPageSize)).Decode(v)
}
