package horizontest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	hprotocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

// key returns a stable key pair for name, so failures name the same
// accounts from run to run.
func key(name string) *keypair.Full {
	return keypair.MustParseFull(mustSeed(name))
}

func mustSeed(name string) string {
	kp, err := keypair.FromRawSeed(sha256.Sum256([]byte("horizontest key " + name)))
	if err != nil {
		panic(err)
	}
	return kp.Seed()
}

var (
	payout   = key("payout") // the watched account, which also pays refunds
	customer = key("customer")
	usdcKey  = key("usdc issuer")
)

func usdc() txnbuild.Asset {
	return txnbuild.CreditAsset{Code: "USDC", Issuer: usdcKey.Address()}
}

// newLedger starts a server watching payout, with USDC of usdcKey and the
// given accounts.
func newLedger(t *testing.T, accounts ...horizontest.Account) *horizontest.Server {
	t.Helper()
	s := horizontest.New(payout.Address())
	t.Cleanup(s.Close)
	s.SetUSDCIssuer(usdcKey.Address())
	for _, a := range accounts {
		require.NoError(t, s.SetAccount(a))
	}
	return s
}

func accountOf(t *testing.T, s *horizontest.Server, id string) horizontest.Account {
	t.Helper()
	a, ok := s.Account(id)
	require.True(t, ok, "account %s exists", id)
	return a
}

// txSpec describes a transaction to build with txnbuild; zero fields take
// a one-payment, correctly signed, five-minute transaction from payout.
type txSpec struct {
	from    *keypair.Full
	seq     int64 // the source's current sequence; the transaction carries seq+1
	ops     []txnbuild.Operation
	memo    txnbuild.Memo
	bounds  *txnbuild.TimeBounds
	signers []*keypair.Full
	network string
	fee     int64 // overrides the envelope's fee after building
}

// build returns the base64 envelope and the transaction hash.
func build(t *testing.T, sp txSpec) (string, string) {
	t.Helper()
	if sp.from == nil {
		sp.from = payout
	}
	if sp.signers == nil {
		sp.signers = []*keypair.Full{sp.from}
	}
	if sp.network == "" {
		sp.network = network.TestNetworkPassphrase
	}
	bounds := txnbuild.NewTimeout(300)
	if sp.bounds != nil {
		bounds = *sp.bounds
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: sp.from.Address(), Sequence: sp.seq},
		IncrementSequenceNum: true,
		Operations:           sp.ops,
		BaseFee:              txnbuild.MinBaseFee,
		Memo:                 sp.memo,
		Preconditions:        txnbuild.Preconditions{TimeBounds: bounds},
	})
	require.NoError(t, err)
	env := tx.ToXDR()
	if sp.fee != 0 {
		// txnbuild refuses a fee below the network minimum, which is the
		// point of this case: edit the envelope instead.
		env.V1.Tx.Fee = xdr.Uint32(sp.fee)
	}
	hash, err := network.HashTransactionInEnvelope(env, sp.network)
	require.NoError(t, err)
	env.V1.Signatures = nil
	for _, kp := range sp.signers {
		sig, err := kp.SignDecorated(hash[:])
		require.NoError(t, err)
		env.V1.Signatures = append(env.V1.Signatures, sig)
	}
	b64, err := xdr.MarshalBase64(env)
	require.NoError(t, err)
	// The hash the server must report is the one for its own network.
	hash, err = network.HashTransactionInEnvelope(env, network.TestNetworkPassphrase)
	require.NoError(t, err)
	return b64, hex.EncodeToString(hash[:])
}

func pay(to string, asset txnbuild.Asset, amount string) *txnbuild.Payment {
	return &txnbuild.Payment{Destination: to, Asset: asset, Amount: amount}
}

// submit POSTs the envelope as Horizon takes it and decodes the answer.
func submit(t *testing.T, s *horizontest.Server, b64 string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/transactions",
		strings.NewReader(url.Values{"tx": {b64}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode, decode(t, resp)
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var body map[string]any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	require.NoError(t, dec.Decode(&body))
	return body
}

func getJSON(t *testing.T, rawURL string) (int, []byte) {
	t.Helper()
	resp := get(t, rawURL, nil)
	var buf bytes.Buffer
	_, err := buf.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, buf.Bytes()
}

// resultCodes returns extras.result_codes of a transaction_failed body.
func resultCodes(t *testing.T, body map[string]any) (string, []string) {
	t.Helper()
	require.Equal(t, "https://stellar.org/horizon-errors/transaction_failed", body["type"], "body: %v", body)
	require.Equal(t, json.Number("400"), body["status"])
	extras := body["extras"].(map[string]any)
	codes := extras["result_codes"].(map[string]any)
	var ops []string
	if raw, ok := codes["operations"].([]any); ok {
		for _, o := range raw {
			ops = append(ops, o.(string))
		}
	}
	return codes["transaction"].(string), ops
}

// payments returns the watched account's payment list.
func payments(t *testing.T, s *horizontest.Server) []map[string]any {
	t.Helper()
	resp := get(t, s.URL+"/accounts/"+payout.Address()+"/payments?join=transactions&limit=200", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p pageBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	return p.Embedded.Records
}

// refundLedger holds a payout account with 10 XLM and 100 USDC at
// sequence 7, and a customer with 2 XLM and a USDC trustline: a USDC
// refund at sequence 7 applies.
func refundLedger(t *testing.T) *horizontest.Server {
	t.Helper()
	return newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "10", USDC: "100", Sequence: 7},
		horizontest.Account{ID: customer.Address(), XLM: "2", TrustUSDC: true},
	)
}

func TestSubmitUSDCPaymentAppliesOnce(t *testing.T) {
	s := refundLedger(t)
	b64, hash := build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(customer.Address(), usdc(), "12.3456789")},
		memo: txnbuild.MemoText("refund rfd_1")})

	status, body := submit(t, s, b64)
	require.Equal(t, http.StatusOK, status, "body: %v", body)
	assert.Equal(t, hash, body["hash"])
	assert.Equal(t, hash, body["id"])
	assert.Equal(t, true, body["successful"])
	assert.Equal(t, b64, body["envelope_xdr"])
	assert.Equal(t, "8", body["source_account_sequence"])
	assert.Equal(t, "100", body["fee_charged"])
	assert.Equal(t, "text", body["memo_type"])
	assert.Equal(t, "refund rfd_1", body["memo"])
	var result xdr.TransactionResult
	require.NoError(t, xdr.SafeUnmarshalBase64(body["result_xdr"].(string), &result))
	assert.Equal(t, xdr.TransactionResultCodeTxSuccess, result.Result.Code)
	assert.Equal(t, xdr.Int64(100), result.FeeCharged)
	require.Len(t, *result.Result.Results, 1)
	assert.Equal(t, xdr.PaymentResultCodePaymentSuccess, (*result.Result.Results)[0].Tr.PaymentResult.Code)

	// The same body decodes into the SDK's own Horizon type.
	code, raw := getJSON(t, s.URL+"/transactions/"+hash)
	require.Equal(t, http.StatusOK, code)
	var tx hprotocol.Transaction
	require.NoError(t, json.Unmarshal(raw, &tx))
	assert.Equal(t, hash, tx.Hash)
	assert.Equal(t, int64(8), tx.AccountSequence)
	assert.Equal(t, body["ledger"], json.Number(jsonInt(tx.Ledger)))
	require.NotNil(t, tx.Preconditions)
	assert.NotEmpty(t, tx.Preconditions.TimeBounds.MaxTime)

	check := func() {
		t.Helper()
		assert.Equal(t, horizontest.Account{ID: payout.Address(), XLM: "9.9999900", USDC: "87.6543211", TrustUSDC: true, Sequence: 8},
			accountOf(t, s, payout.Address()), "amount and fee taken once")
		assert.Equal(t, "12.3456789", accountOf(t, s, customer.Address()).USDC, "paid once")
		recs := payments(t, s)
		require.Len(t, recs, 1, "one payment in the watched account's history")
		rec := recs[0]
		assert.Equal(t, "payment", rec["type"])
		assert.Equal(t, payout.Address(), rec["from"])
		assert.Equal(t, customer.Address(), rec["to"])
		assert.Equal(t, "12.3456789", rec["amount"])
		assert.Equal(t, "USDC", rec["asset_code"])
		assert.Equal(t, usdcKey.Address(), rec["asset_issuer"])
		assert.Equal(t, hash, rec["transaction_hash"])
		assert.Equal(t, true, rec["transaction_successful"])
		embedded := rec["transaction"].(map[string]any)
		assert.Equal(t, "refund rfd_1", embedded["memo"])
		assert.Equal(t, b64, embedded["envelope_xdr"])
	}
	check()

	// Resubmitting the same envelope (after a lost answer) gets the
	// recorded result, as from Horizon, and pays nothing more.
	status, again := submit(t, s, b64)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, hash, again["hash"])
	assert.Equal(t, body["ledger"], again["ledger"])
	check()

	// A rebuilt transaction with the spent sequence number is refused.
	b64b, hashB := build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(customer.Address(), usdc(), "12.3456789")},
		memo: txnbuild.MemoText("refund rfd_1 again")})
	status, body = submit(t, s, b64b)
	assert.Equal(t, http.StatusBadRequest, status)
	txCode, ops := resultCodes(t, body)
	assert.Equal(t, "tx_bad_seq", txCode)
	assert.Empty(t, ops)
	check()
	code, _ = getJSON(t, s.URL+"/transactions/"+hashB)
	assert.Equal(t, http.StatusNotFound, code, "a refused transaction is in no ledger")
	assert.Equal(t, 3, s.Submissions())
}

func jsonInt(v int32) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSubmitNativePaymentToWatchedAccountStreams(t *testing.T) {
	s := newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "1"},
		horizontest.Account{ID: customer.Address(), XLM: "50", Sequence: 41},
	)
	s.SetKeepAlive(20 * time.Millisecond)
	resp := get(t, s.URL+"/accounts/"+payout.Address()+"/payments?cursor=now&join=transactions",
		http.Header{"Accept": {"text/event-stream"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events, _ := readEvents(resp.Body)
	require.Equal(t, "open", nextData(t, events).event)

	b64, hash := build(t, txSpec{from: customer, seq: 41,
		ops: []txnbuild.Operation{pay(payout.Address(), txnbuild.NativeAsset{}, "20.5")}, memo: txnbuild.MemoID(12345678901)})
	status, body := submit(t, s, b64)
	require.Equal(t, http.StatusOK, status, "body: %v", body)

	ev := nextData(t, events)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.data), &rec))
	assert.Equal(t, rec["id"], ev.id)
	assert.Equal(t, customer.Address(), rec["from"])
	assert.Equal(t, payout.Address(), rec["to"])
	assert.Equal(t, "native", rec["asset_type"])
	assert.Equal(t, "20.5000000", rec["amount"])
	assert.Equal(t, hash, rec["transaction_hash"])
	tx := rec["transaction"].(map[string]any)
	assert.Equal(t, "id", tx["memo_type"])
	assert.Equal(t, "12345678901", tx["memo"], "an id memo is a JSON string")

	assert.Equal(t, "21.5000000", accountOf(t, s, payout.Address()).XLM)
	assert.Equal(t, "29.4999900", accountOf(t, s, customer.Address()).XLM)
}

func TestSubmitFailures(t *testing.T) {
	stranger := key("stranger")
	at := time.Now()
	late := txnbuild.NewTimebounds(0, at.Add(time.Minute).Unix())
	base := []horizontest.Account{
		{ID: payout.Address(), XLM: "10", USDC: "100", Sequence: 100},
		{ID: customer.Address(), XLM: "5", TrustUSDC: true},
	}
	one := func(to string, asset txnbuild.Asset, amount string) []txnbuild.Operation {
		return []txnbuild.Operation{pay(to, asset, amount)}
	}
	cases := []struct {
		name     string
		accounts []horizontest.Account // replace base's
		prepare  func(*testing.T, *horizontest.Server)
		spec     txSpec
		txCode   string
		opCodes  []string
		inLedger bool // the fee is charged, the sequence spent, the hash found
	}{
		{name: "sequence ahead", spec: txSpec{seq: 101, ops: one(customer.Address(), usdc(), "1")}, txCode: "tx_bad_seq"},
		{name: "sequence stolen", prepare: func(t *testing.T, s *horizontest.Server) {
			require.NoError(t, s.StealSequence(payout.Address()))
		}, spec: txSpec{seq: 100, ops: one(customer.Address(), usdc(), "1")}, txCode: "tx_bad_seq"},
		{name: "time bounds passed", prepare: func(_ *testing.T, s *horizontest.Server) {
			s.SetClock(func() time.Time { return at.Add(2 * time.Minute) })
		}, spec: txSpec{seq: 100, bounds: &late, ops: one(customer.Address(), usdc(), "1")}, txCode: "tx_too_late"},
		{name: "signed by another key", spec: txSpec{seq: 100, signers: []*keypair.Full{stranger},
			ops: one(customer.Address(), usdc(), "1")}, txCode: "tx_bad_auth"},
		{name: "signed for another network", spec: txSpec{seq: 100, network: network.PublicNetworkPassphrase,
			ops: one(customer.Address(), usdc(), "1")}, txCode: "tx_bad_auth"},
		{name: "unsigned", spec: txSpec{seq: 100, signers: []*keypair.Full{},
			ops: one(customer.Address(), usdc(), "1")}, txCode: "tx_bad_auth"},
		{name: "fee below 100 per operation", spec: txSpec{seq: 100, fee: 199,
			ops: []txnbuild.Operation{pay(customer.Address(), usdc(), "1"), pay(customer.Address(), usdc(), "1")}},
			txCode: "tx_insufficient_fee"},
		{name: "no source account", spec: txSpec{from: stranger, ops: one(customer.Address(), usdc(), "1")},
			txCode: "tx_no_source_account"},
		{name: "fee beyond the reserve", accounts: []horizontest.Account{
			{ID: payout.Address(), XLM: "1", Sequence: 100}, {ID: customer.Address(), XLM: "5"},
		}, spec: txSpec{seq: 100, ops: one(customer.Address(), txnbuild.NativeAsset{}, "0.0000001")},
			txCode: "tx_insufficient_balance"},
		{name: "other operation type", spec: txSpec{seq: 100, ops: []txnbuild.Operation{
			&txnbuild.CreateAccount{Destination: stranger.Address(), Amount: "2"}}},
			txCode: "tx_failed", opCodes: []string{"op_not_supported"}},
		{name: "no destination", spec: txSpec{seq: 100, ops: one(stranger.Address(), usdc(), "1")},
			txCode: "tx_failed", opCodes: []string{"op_no_destination"}, inLedger: true},
		{name: "no trustline", accounts: []horizontest.Account{
			{ID: payout.Address(), XLM: "10", USDC: "100", Sequence: 100}, {ID: customer.Address(), XLM: "5"},
		}, spec: txSpec{seq: 100, ops: one(customer.Address(), usdc(), "1")},
			txCode: "tx_failed", opCodes: []string{"op_no_trust"}, inLedger: true},
		{name: "USDC underfunded", spec: txSpec{seq: 100, ops: one(customer.Address(), usdc(), "100.0000001")},
			txCode: "tx_failed", opCodes: []string{"op_underfunded"}, inLedger: true},
		{name: "XLM underfunded by the reserve", // 10 XLM - 1.5 XLM reserve (one trustline) - fee
			spec:   txSpec{seq: 100, ops: one(customer.Address(), txnbuild.NativeAsset{}, "8.4999901")},
			txCode: "tx_failed", opCodes: []string{"op_underfunded"}, inLedger: true},
		{name: "sender without trustline", accounts: []horizontest.Account{
			{ID: payout.Address(), XLM: "10", Sequence: 100}, {ID: customer.Address(), XLM: "5", TrustUSDC: true},
		}, spec: txSpec{seq: 100, ops: one(customer.Address(), usdc(), "1")},
			txCode: "tx_failed", opCodes: []string{"op_src_no_trust"}, inLedger: true},
		{name: "second operation fails, first is undone", spec: txSpec{seq: 100, ops: []txnbuild.Operation{
			pay(customer.Address(), usdc(), "10"), pay(stranger.Address(), usdc(), "1")}},
			txCode: "tx_failed", opCodes: []string{"op_success", "op_no_destination"}, inLedger: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			accounts := base
			if tc.accounts != nil {
				accounts = tc.accounts
			}
			s := newLedger(t, accounts...)
			s.SetClock(func() time.Time { return at })
			if tc.prepare != nil {
				tc.prepare(t, s)
			}
			before := map[string]horizontest.Account{}
			for _, a := range accounts {
				before[a.ID] = accountOf(t, s, a.ID)
			}
			b64, hash := build(t, tc.spec)

			status, body := submit(t, s, b64)
			require.Equal(t, http.StatusBadRequest, status, "body: %v", body)
			txCode, opCodes := resultCodes(t, body)
			assert.Equal(t, tc.txCode, txCode)
			assert.Equal(t, tc.opCodes, opCodes)
			extras := body["extras"].(map[string]any)
			assert.Equal(t, b64, extras["envelope_xdr"])
			var result xdr.TransactionResult
			require.NoError(t, xdr.SafeUnmarshalBase64(extras["result_xdr"].(string), &result))
			assert.Equal(t, txResultCodes[tc.txCode], result.Result.Code, "result_xdr carries the code")
			if tc.inLedger {
				assert.Empty(t, s.Rejections(), "in a ledger: not a rejection")
			} else {
				assert.Equal(t, map[string]int{tc.txCode: 1}, s.Rejections(), "the rejection is counted by its code")
			}

			// No payment moved; only a transaction in a ledger costs its
			// fee and its sequence number.
			from := tc.spec.from
			if from == nil {
				from = payout
			}
			for id, want := range before {
				if tc.inLedger && id == from.Address() {
					want.Sequence++
					want.XLM = minus(t, want.XLM, int64(100*len(tc.spec.ops)))
				}
				assert.Equal(t, want, accountOf(t, s, id), "account %s", id)
			}
			code, raw := getJSON(t, s.URL+"/transactions/"+hash)
			if !tc.inLedger {
				assert.Equal(t, http.StatusNotFound, code)
				assert.Empty(t, payments(t, s), "nothing in the history")
				return
			}
			require.Equal(t, http.StatusOK, code)
			var tx hprotocol.Transaction
			require.NoError(t, json.Unmarshal(raw, &tx))
			assert.False(t, tx.Successful)
			assert.Equal(t, int64(100*len(tc.spec.ops)), tx.FeeCharged)
			// The watched account's history lists the failed payments, as
			// the package does for failed transactions.
			recs := payments(t, s)
			assert.Len(t, recs, len(tc.spec.ops))
			for _, r := range recs {
				assert.Equal(t, false, r["transaction_successful"])
				assert.Equal(t, hash, r["transaction_hash"])
			}
			// A resubmission gets the same failure and changes nothing.
			status, again := submit(t, s, b64)
			assert.Equal(t, http.StatusBadRequest, status)
			txCode2, opCodes2 := resultCodes(t, again)
			assert.Equal(t, []any{tc.txCode, tc.opCodes}, []any{txCode2, opCodes2})
		})
	}
}

// txResultCodes are the XDR codes behind Horizon's names.
var txResultCodes = map[string]xdr.TransactionResultCode{
	"tx_failed":               xdr.TransactionResultCodeTxFailed,
	"tx_too_late":             xdr.TransactionResultCodeTxTooLate,
	"tx_bad_seq":              xdr.TransactionResultCodeTxBadSeq,
	"tx_bad_auth":             xdr.TransactionResultCodeTxBadAuth,
	"tx_insufficient_balance": xdr.TransactionResultCodeTxInsufficientBalance,
	"tx_no_source_account":    xdr.TransactionResultCodeTxNoAccount,
	"tx_insufficient_fee":     xdr.TransactionResultCodeTxInsufficientFee,
}

// minus subtracts stroops from a Horizon amount, exactly.
func minus(t *testing.T, a string, stroops int64) string {
	t.Helper()
	n, err := amount.ParseInt64(a)
	require.NoError(t, err)
	return amount.StringFromInt64(n - stroops)
}

func TestTimeoutAfterApply(t *testing.T) {
	s := refundLedger(t)
	b64, hash := build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(customer.Address(), usdc(), "25")},
		memo: txnbuild.MemoText("rfd_2")})
	s.TimeoutAfterApply(1)

	status, body := submit(t, s, b64)
	assert.Equal(t, http.StatusGatewayTimeout, status)
	assert.Equal(t, "https://stellar.org/horizon-errors/timeout", body["type"])
	assert.Equal(t, "Timeout", body["title"])
	assert.Equal(t, json.Number("504"), body["status"])

	// The outcome is unknown to the client but the payment happened: the
	// hash is found, and the money moved once.
	code, raw := getJSON(t, s.URL+"/transactions/"+hash)
	require.Equal(t, http.StatusOK, code)
	var tx hprotocol.Transaction
	require.NoError(t, json.Unmarshal(raw, &tx))
	assert.True(t, tx.Successful)
	assert.Equal(t, "rfd_2", tx.Memo)
	assert.Equal(t, "25.0000000", accountOf(t, s, customer.Address()).USDC)

	// Sending the same envelope again, as the timeout problem advises,
	// answers the recorded success and pays nothing more.
	status, body = submit(t, s, b64)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, hash, body["hash"])
	assert.Equal(t, "25.0000000", accountOf(t, s, customer.Address()).USDC)
	assert.Equal(t, "75.0000000", accountOf(t, s, payout.Address()).USDC)
	assert.Len(t, payments(t, s), 1)
}

func TestDelayedSubmissionAppliesAfterClientGaveUp(t *testing.T) {
	s := newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "10", Sequence: 7},
		horizontest.Account{ID: customer.Address(), XLM: "2"},
	)
	b64, hash := build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(customer.Address(), txnbuild.NativeAsset{}, "3")}})
	s.DelaySubmissions(1, 300*time.Millisecond)

	client := &http.Client{Timeout: 50 * time.Millisecond}
	start := time.Now()
	_, err := client.PostForm(s.URL+"/transactions", url.Values{"tx": {b64}})
	require.Error(t, err, "the client times out while the submission is held")

	code, _ := getJSON(t, s.URL+"/transactions/"+hash)
	assert.Equal(t, http.StatusNotFound, code, "not applied yet")
	assert.Equal(t, "2.0000000", accountOf(t, s, customer.Address()).XLM)

	require.Eventually(t, func() bool {
		code, _ := getJSON(t, s.URL+"/transactions/"+hash)
		return code == http.StatusOK
	}, 3*time.Second, 20*time.Millisecond, "applied once the delay is over")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, "5.0000000", accountOf(t, s, customer.Address()).XLM)

	// Only the next submission was held.
	b64b, _ := build(t, txSpec{seq: 8, ops: []txnbuild.Operation{pay(customer.Address(), txnbuild.NativeAsset{}, "1")}})
	start = time.Now()
	status, body := submit(t, s, b64b)
	require.Equal(t, http.StatusOK, status, "body: %v", body)
	assert.Less(t, time.Since(start), 250*time.Millisecond)
}

// TestHorizonClient talks to the server with the SDK's own Horizon client,
// which the service's payout code uses: every body must parse there.
func TestHorizonClient(t *testing.T) {
	s := newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "10", USDC: "100"},
		horizontest.Account{ID: customer.Address(), XLM: "2"},
	)
	client := &horizonclient.Client{HorizonURL: s.URL + "/", HTTP: http.DefaultClient}

	acc, err := client.AccountDetail(horizonclient.AccountRequest{AccountID: payout.Address()})
	require.NoError(t, err)
	assert.Equal(t, "100.0000000", acc.GetCreditBalance("USDC", usdcKey.Address()))
	native, err := acc.GetNativeBalance()
	require.NoError(t, err)
	assert.Equal(t, "10.0000000", native)

	// Built from the account Horizon returned, as a payout would be.
	refund := func(acc hprotocol.Account) *txnbuild.Transaction {
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
			SourceAccount:        &acc,
			IncrementSequenceNum: true,
			Operations:           []txnbuild.Operation{pay(customer.Address(), usdc(), "1")},
			BaseFee:              txnbuild.MinBaseFee,
			Memo:                 txnbuild.MemoText("rfd_3"),
			Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(300)},
		})
		require.NoError(t, err)
		tx, err = tx.Sign(network.TestNetworkPassphrase, payout)
		require.NoError(t, err)
		return tx
	}
	tx := refund(acc)

	_, err = client.SubmitTransactionWithOptions(tx, horizonclient.SubmitTxOpts{SkipMemoRequiredCheck: true})
	herr := horizonclient.GetError(err)
	require.NotNil(t, herr, "no trustline: %v", err)
	codes, err := herr.ResultCodes()
	require.NoError(t, err)
	assert.Equal(t, "tx_failed", codes.TransactionCode)
	assert.Equal(t, []string{"op_no_trust"}, codes.OperationCodes)
	resultXDR, err := herr.ResultString()
	require.NoError(t, err)
	assert.NotEmpty(t, resultXDR)

	require.NoError(t, s.SetAccount(horizontest.Account{ID: customer.Address(), XLM: "2", TrustUSDC: true}))
	acc, err = client.AccountDetail(horizonclient.AccountRequest{AccountID: payout.Address()})
	require.NoError(t, err)
	tx = refund(acc)
	s.TimeoutAfterApply(1)
	_, err = client.SubmitTransactionWithOptions(tx, horizonclient.SubmitTxOpts{SkipMemoRequiredCheck: true})
	herr = horizonclient.GetError(err)
	require.NotNil(t, herr, "timeout: %v", err)
	assert.Equal(t, http.StatusGatewayTimeout, herr.Problem.Status)
	assert.Equal(t, "https://stellar.org/horizon-errors/timeout", herr.Problem.Type)

	hash, err := tx.HashHex(network.TestNetworkPassphrase)
	require.NoError(t, err)
	found, err := client.TransactionDetail(hash)
	require.NoError(t, err)
	assert.True(t, found.Successful)
	assert.Equal(t, "rfd_3", found.Memo)
	assert.Equal(t, "1.0000000", accountOf(t, s, customer.Address()).USDC)

	_, err = client.TransactionDetail(strings.Repeat("0", 64))
	herr = horizonclient.GetError(err)
	require.NotNil(t, herr)
	assert.Equal(t, http.StatusNotFound, herr.Problem.Status)
}

// feeBump wraps the envelope b64 in a fee bump paid by kp at baseFee per
// operation (the fee bump counting as one) and returns it and its hash.
func feeBump(t *testing.T, b64 string, kp *keypair.Full, baseFee int64) (string, string) {
	t.Helper()
	generic, err := txnbuild.TransactionFromXDR(b64)
	require.NoError(t, err)
	inner, ok := generic.Transaction()
	require.True(t, ok)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: kp.Address(), BaseFee: baseFee})
	require.NoError(t, err)
	fb, err = fb.Sign(network.TestNetworkPassphrase, kp)
	require.NoError(t, err)
	out, err := fb.Base64()
	require.NoError(t, err)
	hash, err := fb.HashHex(network.TestNetworkPassphrase)
	require.NoError(t, err)
	return out, hash
}

// TestSubmitSurgePricingAndFeeBumps: under surge pricing a transaction
// bidding less than the base fee is refused with tx_insufficient_fee and
// /fee_stats says what to bid; a fee bump of that same signed transaction
// at the base fee applies it once, charged the base fee for two
// operations, and Horizon finds it by either hash.
func TestSubmitSurgePricingAndFeeBumps(t *testing.T) {
	s := newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "10", Sequence: 7},
		horizontest.Account{ID: customer.Address(), XLM: "2"},
	)
	s.SetBaseFee(1000)
	status, stats := getJSON(t, s.URL+"/fee_stats")
	require.Equal(t, http.StatusOK, status)
	var fs hprotocol.FeeStats
	require.NoError(t, json.Unmarshal(stats, &fs))
	assert.Equal(t, int64(1000), fs.LastLedgerBaseFee)
	assert.Equal(t, int64(1000), fs.MaxFee.P90)
	assert.Equal(t, int64(1000), fs.FeeCharged.P50)

	b64, innerHash := build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(customer.Address(), txnbuild.NativeAsset{}, "1")}})
	status, body := submit(t, s, b64)
	assert.Equal(t, http.StatusBadRequest, status)
	code, _ := resultCodes(t, body)
	assert.Equal(t, "tx_insufficient_fee", code)

	low, _ := feeBump(t, b64, payout, 999)
	status, body = submit(t, s, low)
	assert.Equal(t, http.StatusBadRequest, status)
	code, _ = resultCodes(t, body)
	assert.Equal(t, "tx_insufficient_fee", code, "a fee bump below the base fee is refused too")

	bumped, outerHash := feeBump(t, b64, payout, 1000)
	status, body = submit(t, s, bumped)
	require.Equal(t, http.StatusOK, status, "body: %v", body)
	assert.Equal(t, outerHash, body["hash"])
	assert.Equal(t, "2000", body["fee_charged"], "the base fee for the payment and the fee bump")
	assert.Equal(t, map[string]any{"hash": outerHash, "signatures": body["signatures"]}, body["fee_bump_transaction"])
	inner := body["inner_transaction"].(map[string]any)
	assert.Equal(t, innerHash, inner["hash"])
	assert.Equal(t, "100", inner["max_fee"])
	var res xdr.TransactionResult
	require.NoError(t, xdr.SafeUnmarshalBase64(body["result_xdr"].(string), &res))
	assert.Equal(t, xdr.TransactionResultCodeTxFeeBumpInnerSuccess, res.Result.Code)
	assert.Equal(t, "3.0000000", accountOf(t, s, customer.Address()).XLM)
	assert.Equal(t, "8.9998000", accountOf(t, s, payout.Address()).XLM)

	for _, h := range []string{outerHash, innerHash} {
		status, raw := getJSON(t, s.URL+"/transactions/"+h)
		require.Equal(t, http.StatusOK, status)
		var tx hprotocol.Transaction
		require.NoError(t, json.Unmarshal(raw, &tx))
		assert.Equal(t, h, tx.Hash)
		assert.True(t, tx.Successful)
		assert.Equal(t, innerHash, tx.InnerTransaction.Hash)
		assert.Equal(t, outerHash, tx.FeeBumpTransaction.Hash)
	}

	// The inner transaction, alone or bumped again, cannot apply twice.
	status, _ = submit(t, s, b64)
	assert.Equal(t, http.StatusOK, status, "Horizon answers the inner transaction's recorded result")
	again, _ := feeBump(t, b64, payout, 2000)
	status, body = submit(t, s, again)
	assert.Equal(t, http.StatusBadRequest, status)
	code, _ = resultCodes(t, body)
	assert.Equal(t, "tx_fee_bump_inner_failed", code)
	assert.Equal(t, "tx_bad_seq", body["extras"].(map[string]any)["result_codes"].(map[string]any)["inner_transaction"])
	assert.Equal(t, "3.0000000", accountOf(t, s, customer.Address()).XLM, "paid once")
}
