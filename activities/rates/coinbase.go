package rates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// CoinbaseURL is the base URL of Coinbase's public API.
const CoinbaseURL = "https://api.coinbase.com"

const (
	// coinbaseTimeout bounds a request when the caller brings no client;
	// callers bound it further with their context.
	coinbaseTimeout = 5 * time.Second
	// coinbaseMaxBody bounds what is read of a response. A spot price is
	// about 60 bytes; anything near this is not one.
	coinbaseMaxBody = 64 << 10
	// coinbaseSnippet bounds how much of an error body goes into an error,
	// which ends up in logs and Temporal histories.
	coinbaseSnippet = 200
)

// Coinbase is a Provider backed by Coinbase's public spot-price endpoint,
// GET /v2/prices/{BASE}-{QUOTE}/spot, which needs no API key.
type Coinbase struct {
	baseURL string
	client  *http.Client
	now     func() time.Time
}

// NewCoinbase returns a provider calling the API at baseURL (CoinbaseURL
// in production, an httptest server in tests). A nil client gets a
// default one with a 5-second timeout; a nil now is time.Now.
func NewCoinbase(baseURL string, client *http.Client, now func() time.Time) *Coinbase {
	if client == nil {
		client = &http.Client{Timeout: coinbaseTimeout}
	}
	if now == nil {
		now = time.Now
	}
	return &Coinbase{baseURL: strings.TrimRight(baseURL, "/"), client: client, now: now}
}

// coinbaseSpot is the spot-price response. Amount is a json.Number, so it
// is kept as the exact text Coinbase sent, quoted (as it is today) or not.
type coinbaseSpot struct {
	Data struct {
		Amount   json.Number `json:"amount"`
		Base     string      `json:"base"`
		Currency string      `json:"currency"`
	} `json:"data"`
}

// Rate returns Coinbase's current spot price of base in quote. The
// endpoint gives no timestamp, so the rate is dated when it was received.
// The response must echo the pair asked for and carry a positive price;
// anything else is an error, as is a status other than 200.
func (c *Coinbase) Rate(ctx context.Context, base, quote string) (models.Rate, error) {
	base, quote = strings.ToUpper(base), strings.ToUpper(quote)
	product := base + "-" + quote
	if !currencyCode(base) || !currencyCode(quote) {
		return models.Rate{}, fmt.Errorf("coinbase: invalid currency pair %q", product)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+"/v2/prices/"+product+"/spot", nil)
	if err != nil {
		return models.Rate{}, fmt.Errorf("coinbase %s: %w", product, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return models.Rate{}, fmt.Errorf("coinbase %s: %w", product, err)
	}
	defer resp.Body.Close()

	body, err := io.ReadAll(io.LimitReader(resp.Body, coinbaseMaxBody+1))
	if err != nil {
		return models.Rate{}, fmt.Errorf("coinbase %s: reading response: %w", product, err)
	}
	if resp.StatusCode != http.StatusOK {
		return models.Rate{}, fmt.Errorf("coinbase %s: status %d: %q", product, resp.StatusCode, snippet(body))
	}
	if len(body) > coinbaseMaxBody {
		return models.Rate{}, fmt.Errorf("coinbase %s: response larger than %d bytes", product, coinbaseMaxBody)
	}
	at := c.now()

	var spot coinbaseSpot
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&spot); err != nil {
		return models.Rate{}, fmt.Errorf("coinbase %s: decoding response: %w", product, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return models.Rate{}, fmt.Errorf("coinbase %s: unexpected data after the response", product)
	}
	d := spot.Data
	if d.Base != base || d.Currency != quote {
		return models.Rate{}, fmt.Errorf("coinbase %s: response is for %.10q-%.10q", product, d.Base, d.Currency)
	}
	price, err := decimal.NewFromString(d.Amount.String())
	if err != nil {
		return models.Rate{}, fmt.Errorf("coinbase %s: amount %.40q is not a number", product, d.Amount)
	}
	// Bounded: "1e400" is a number to the decimal library, and a rate is
	// multiplied into amounts and stored. Exponent notation within the
	// bounds is fine (a price, not a client's amount).
	if price.Exponent() > 0 || price.Exponent() < -40 || len(price.Coefficient().String()) > 40 {
		return models.Rate{}, fmt.Errorf("coinbase %s: amount %.40q is out of bounds", product, d.Amount)
	}
	if !price.IsPositive() {
		return models.Rate{}, fmt.Errorf("coinbase %s: price must be positive, got %s", product, price)
	}
	return models.Rate{
		Base:   base,
		Quote:  quote,
		Price:  price,
		Source: "coinbase:" + product,
		At:     at,
	}, nil
}

// currencyCode reports whether s looks like a currency or asset code:
// 2 to 10 upper-case letters or digits. It keeps anything that could
// change the request path out of it.
func currencyCode(s string) bool {
	if len(s) < 2 || len(s) > 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < 'A' || s[i] > 'Z') && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// snippet returns the start of an error body, enough to recognise
// Coinbase's error JSON or a proxy's page without copying it whole.
func snippet(body []byte) string {
	if len(body) > coinbaseSnippet {
		return string(body[:coinbaseSnippet]) + "..."
	}
	return string(body)
}
