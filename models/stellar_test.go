package models

import (
	"encoding/base32"
	"net/url"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real account ids, checked by other software: Circle's USDC issuers, the
// destination in SEP-0007's examples, and the all-zero key.
const (
	sep7ExampleAccount = "GCALNQQBXAPZ2WIRSDDBMSTAKCUH5SG6U76YBFLQLIXJTF7FE5AX7AOO"
	zeroKeyAccount     = "GAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAWHF"
)

// encodeStrKey builds a StrKey with any version byte and payload, to make
// well-formed ids of the kinds ValidateStellarAccount must refuse.
func encodeStrKey(version byte, payload []byte) string {
	raw := append([]byte{version}, payload...)
	sum := crc16XModem(raw)
	raw = append(raw, byte(sum), byte(sum>>8))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
}

func TestStellarNetwork(t *testing.T) {
	tests := []struct {
		n          StellarNetwork
		valid      bool
		passphrase string
	}{
		{StellarPubnet, true, "Public Global Stellar Network ; September 2015"},
		{StellarTestnet, true, "Test SDF Network ; September 2015"},
		{"", false, ""},
		{"mainnet", false, ""},
		{"Pubnet", false, ""},
	}
	for _, tc := range tests {
		t.Run(string(tc.n), func(t *testing.T) {
			assert.Equal(t, tc.valid, tc.n.Valid())
			assert.Equal(t, tc.passphrase, tc.n.Passphrase())
			if !tc.valid {
				assert.Empty(t, DefaultUSDCIssuer(tc.n))
			}
		})
	}
}

func TestDefaultUSDCIssuer(t *testing.T) {
	tests := []struct {
		n    StellarNetwork
		want string
	}{
		{StellarPubnet, "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"},
		{StellarTestnet, "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"},
	}
	for _, tc := range tests {
		t.Run(string(tc.n), func(t *testing.T) {
			got := DefaultUSDCIssuer(tc.n)
			assert.Equal(t, tc.want, got)
			assert.NoError(t, ValidateStellarAccount(got), "issuer must be a valid account id")
		})
	}
	assert.NotEqual(t, DefaultUSDCIssuer(StellarPubnet), DefaultUSDCIssuer(StellarTestnet))
}

func TestCRC16XModem(t *testing.T) {
	// The standard check value of CRC-16/XMODEM.
	assert.Equal(t, uint16(0x31C3), crc16XModem([]byte("123456789")))
	assert.Equal(t, uint16(0), crc16XModem(nil))
}

func TestValidateStellarAccountAccepts(t *testing.T) {
	for _, id := range []string{
		DefaultUSDCIssuer(StellarPubnet),
		DefaultUSDCIssuer(StellarTestnet),
		sep7ExampleAccount,
		zeroKeyAccount,
		encodeStrKey(strKeyAccountVersion, []byte(strings.Repeat("\xff", 32))),
	} {
		t.Run(id, func(t *testing.T) {
			assert.NoError(t, ValidateStellarAccount(id))
		})
	}
}

func TestValidateStellarAccountRejects(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	valid := sep7ExampleAccount
	// Changing one character changes the decoded bytes, and CRC-16 catches
	// every error burst of up to 16 bits.
	typo := valid[:20] + "X" + valid[21:]
	require.NotEqual(t, valid, typo)
	lastChanged := valid[:55] + "A"
	require.NotEqual(t, valid, lastChanged)

	tests := []struct {
		name    string
		id      string
		wantMsg string
	}{
		{"empty", "", "empty"},
		{"lower case", strings.ToLower(valid), "upper case"},
		{"one lower-case letter", valid[:10] + strings.ToLower(valid[10:11]) + valid[11:], "upper case"},
		{"padding", valid[:54] + "==", "outside base32"},
		{"digit outside base32", valid[:30] + "1" + valid[31:], "outside base32"},
		{"surrounding space", " " + valid, "outside base32"},
		{"newline", valid[:28] + "\n" + valid[29:], "outside base32"},
		{"muxed account", encodeStrKey(12<<3, append(key, 0, 0, 0, 0, 0, 0, 0, 42)), "muxed"},
		{"secret seed", encodeStrKey(18<<3, key), "secret seed"},
		{"pre-auth tx", encodeStrKey(19<<3, key), "must start with G"},
		{"too short", valid[:55], "56 characters"},
		{"too long", valid + "A", "56 characters"},
		{"checksum typo", typo, "checksum"},
		{"checksum byte changed", lastChanged, "checksum"},
		// 'G' followed by a character with a high bit set gives version
		// byte 49, not 48.
		{"wrong version byte", "GE" + valid[2:], "version byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateStellarAccount(tc.id)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestValidateStellarAccountNeverEchoesID(t *testing.T) {
	seed := encodeStrKey(18<<3, []byte("0123456789abcdef0123456789abcdef"))
	for _, id := range []string{seed, strings.ToLower(seed), seed[:40], seed + "A"} {
		err := ValidateStellarAccount(id)
		require.Error(t, err)
		assert.NotContains(t, strings.ToUpper(err.Error()), seed[:20], "a pasted secret must not reach logs")
	}
}

func TestOrderNumberFromMemo(t *testing.T) {
	tests := []struct {
		name     string
		memoType string
		memo     string
		want     string
		wantOK   bool
	}{
		{"text", "text", "12345678906", "12345678906", true},
		{"text with dashes", "text", "1234-5678-906", "12345678906", true},
		{"text with spaces", "text", " 1234 5678 906 ", "12345678906", true},
		{"text with a typo", "text", "12345678960", "", false},
		{"text with a hash sign", "text", "#12345678906", "", false},
		{"text empty", "text", "", "", false},
		{"id", "id", "12345678906", "12345678906", true},
		{"id other order", "id", "99999999992", "99999999992", true},
		{"id bad check digit", "id", "12345678907", "", false},
		{"id 10 digits", "id", "1234567890", "", false},
		{"id 12 digits", "id", "123456789061", "", false},
		{"id leading zero", "id", "012345678906", "", false},
		{"id plus sign", "id", "+12345678906", "", false},
		{"id with dashes", "id", "1234-5678-906", "", false},
		{"id with space", "id", "12345678906 ", "", false},
		{"id max uint64", "id", "18446744073709551615", "", false},
		{"id overflow", "id", "18446744073709551616", "", false},
		{"id empty", "id", "", "", false},
		{"hash", "hash", "12345678906", "", false},
		{"return", "return", "12345678906", "", false},
		{"none", "none", "", "", false},
		{"none with a memo", "none", "12345678906", "", false},
		{"empty type", "", "12345678906", "", false},
		{"upper-case type", "TEXT", "12345678906", "", false},
		{"SEP-0007 type name", "MEMO_TEXT", "12345678906", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := OrderNumberFromMemo(tc.memoType, tc.memo)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPayURI(t *testing.T) {
	usdc := DefaultUSDCIssuer(StellarPubnet)
	tests := []struct {
		name string
		req  PayRequest
		want string
	}{
		{
			name: "USDC on pubnet",
			req: PayRequest{
				Destination: sep7ExampleAccount,
				Amount:      decimal.RequireFromString("12.50"),
				AssetCode:   "USDC",
				AssetIssuer: usdc,
				Memo:        "12345678906",
				MemoType:    MemoTypeText,
				Message:     "Memocart order 12345678906",
			},
			want: "web+stellar:pay?destination=" + sep7ExampleAccount +
				"&amount=12.5&asset_code=USDC&asset_issuer=" + usdc +
				"&memo=12345678906&memo_type=MEMO_TEXT&msg=Memocart%20order%2012345678906",
		},
		{
			name: "XLM on testnet with an id memo",
			req: PayRequest{
				Destination:       sep7ExampleAccount,
				Amount:            decimal.RequireFromString("40.1234567"),
				Memo:              "12345678906",
				MemoType:          MemoTypeID,
				NetworkPassphrase: StellarTestnet.Passphrase(),
			},
			want: "web+stellar:pay?destination=" + sep7ExampleAccount +
				"&amount=40.1234567&memo=12345678906&memo_type=MEMO_ID" +
				"&network_passphrase=Test%20SDF%20Network%20%3B%20September%202015",
		},
		{
			name: "reserved characters are encoded",
			req: PayRequest{
				Destination: sep7ExampleAccount,
				Amount:      decimal.RequireFromString("1"),
				Memo:        "1234 5678-906",
				MemoType:    MemoTypeText,
				Message:     "a+b & c=d? 100%/é",
			},
			want: "web+stellar:pay?destination=" + sep7ExampleAccount +
				"&amount=1&memo=1234%205678-906&memo_type=MEMO_TEXT" +
				"&msg=a%2Bb%20%26%20c%3Dd%3F%20100%25%2F%C3%A9",
		},
		{
			name: "only the destination",
			req:  PayRequest{Destination: sep7ExampleAccount},
			want: "web+stellar:pay?destination=" + sep7ExampleAccount,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PayURI(tc.req)
			assert.Equal(t, tc.want, got)

			// A wallet decoding the query gets back exactly what was put in.
			rest, ok := strings.CutPrefix(got, "web+stellar:pay?")
			require.True(t, ok)
			q, err := url.ParseQuery(rest)
			require.NoError(t, err)
			assert.Equal(t, tc.req.Destination, q.Get("destination"))
			assert.Equal(t, tc.req.Memo, q.Get("memo"))
			assert.Equal(t, tc.req.Message, q.Get("msg"))
			assert.Equal(t, tc.req.NetworkPassphrase, q.Get("network_passphrase"))
			if !tc.req.Amount.IsZero() {
				amount, err := decimal.NewFromString(q.Get("amount"))
				require.NoError(t, err)
				assert.True(t, tc.req.Amount.Equal(amount))
			}
		})
	}
}

func TestQuoteXLM(t *testing.T) {
	tests := []struct {
		name  string
		total string
		price string
		want  string
	}{
		{"exact", "10", "0.25", "40"},
		{"exact at 7 decimals", "0.0000001", "1", "0.0000001"},
		{"repeating decimal rounds up", "10", "3", "3.3333334"},
		{"rounds up even just past a stroop", "1", "0.1234", "8.1037278"},
		{"below one stroop rounds up to one", "0.00000001", "1", "0.0000001"},
		{"never rounds down at the 8th decimal", "0.00000011", "1", "0.0000002"},
		{"high price", "123.45", "1000000", "0.0001235"},
		{"many decimals in the price", "99.99", "0.123456789012345678", "809.9190073"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			total := decimal.RequireFromString(tc.total)
			price := decimal.RequireFromString(tc.price)
			got, err := QuoteXLM(total, price)
			require.NoError(t, err)
			assert.Truef(t, decimal.RequireFromString(tc.want).Equal(got), "want %s, got %s", tc.want, got)
			// Never under-collect, and never by more than a stroop over.
			assert.True(t, got.Mul(price).GreaterThanOrEqual(total), "%s XLM is worth less than %s", got, total)
			assert.True(t, got.Sub(stroop).Mul(price).LessThan(total), "%s XLM is more than a stroop over", got)
			assert.LessOrEqual(t, -got.Exponent(), int32(7), "at most 7 decimals")
		})
	}
}

func TestQuoteXLMRejects(t *testing.T) {
	tests := []struct {
		name, total, price, wantMsg string
	}{
		{"zero price", "10", "0", "price"},
		{"negative price", "10", "-0.1", "price"},
		{"zero total", "0", "0.1", "total"},
		{"negative total", "-10", "0.1", "total"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := QuoteXLM(decimal.RequireFromString(tc.total), decimal.RequireFromString(tc.price))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestStellarAmount(t *testing.T) {
	for _, s := range []string{
		"12.3456789", "0", "0.0000000", "0.0000001", "100", "100.5", "007.1",
		"922337203685.4775807",
	} {
		t.Run(s, func(t *testing.T) {
			got, err := StellarAmount(s)
			require.NoError(t, err)
			assert.True(t, decimal.RequireFromString(s).Equal(got), "got %s", got)
		})
	}
	// Exactly, not via a float: 0.1 + 0.2 is 0.3.
	a, err := StellarAmount("0.1")
	require.NoError(t, err)
	b, err := StellarAmount("0.2")
	require.NoError(t, err)
	assert.Equal(t, "0.3", a.Add(b).String())
}

func TestStellarAmountRejects(t *testing.T) {
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "want digits"},
		{"negative", "-1", "want digits"},
		{"plus sign", "+1", "want digits"},
		{"exponent", "1e5", "want digits"},
		{"upper-case exponent", "1.5E-3", "want digits"},
		{"8 decimals", "1.23456789", "more than 7"},
		{"8 decimals of zeros", "1.00000000", "more than 7"},
		{"no whole part", ".5", "want digits"},
		{"no fraction", "5.", "want digits"},
		{"two points", "1.2.3", "want digits"},
		{"leading space", " 1", "want digits"},
		{"trailing space", "1 ", "want digits"},
		{"comma", "1,5", "want digits"},
		{"hex", "0x10", "want digits"},
		{"non-ASCII digit", "\uff11", "want digits"},
		{"NaN", "NaN", "want digits"},
		{"above int64 stroops", "922337203685.4775808", "largest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StellarAmount(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.True(t, got.IsZero())
		})
	}
}

func TestStellarAccountIDRoundTrip(t *testing.T) {
	for _, seed := range []byte{0, 1, 0x7f, 0xff} {
		var key [32]byte
		for i := range key {
			key[i] = seed ^ byte(i)
		}
		id := StellarAccountID(key)
		assert.Len(t, id, 56)
		assert.NoError(t, ValidateStellarAccount(id), "encoded %x", key)
		// One changed character breaks the checksum.
		last := id[len(id)-1]
		swapped := id[:len(id)-1] + string("AB"[map[bool]int{true: 1}[last == 'A']])
		assert.Error(t, ValidateStellarAccount(swapped))
	}
	var zero [32]byte
	assert.Equal(t, "GAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAWHF", StellarAccountID(zero), "the well-known all-zero account")
}
