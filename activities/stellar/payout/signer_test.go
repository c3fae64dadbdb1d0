package payout_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/payout"
)

func TestFileSignerSigns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed")
	require.NoError(t, os.WriteFile(path, []byte("\n  "+payoutKey.Seed()+"\r\n"), 0o600))
	s, err := payout.NewFileSigner(path)
	require.NoError(t, err)
	assert.Equal(t, payoutKey.Address(), s.Address())

	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: payoutKey.Address(), Sequence: 1},
		IncrementSequenceNum: true,
		Operations:           []txnbuild.Operation{&txnbuild.Payment{Destination: issuerKey.Address(), Amount: "1", Asset: txnbuild.NativeAsset{}}},
		BaseFee:              txnbuild.MinBaseFee,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)},
	})
	require.NoError(t, err)
	signed, err := s.Sign(tx, network.TestNetworkPassphrase)
	require.NoError(t, err)
	require.Len(t, signed.Signatures(), 1)
	hash, err := signed.Hash(network.TestNetworkPassphrase)
	require.NoError(t, err)
	assert.NoError(t, payoutKey.Verify(hash[:], signed.Signatures()[0].Signature), "signed by the seed's key")

	_, err = payout.FileSigner{}.Sign(tx, network.TestNetworkPassphrase)
	assert.Error(t, err, "a signer without a key refuses")
}

func TestFileSignerNeverShowsTheSeed(t *testing.T) {
	s := fileSigner(t, payoutKey)
	seed := payoutKey.Seed()
	var shown []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		shown = append(shown, fmt.Sprintf(verb, s), fmt.Sprintf(verb, *s), fmt.Sprintf(verb, []any{s}))
	}
	shown = append(shown, s.String())
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("signer", "signer", s, "value", *s)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("signer", "signer", s, "value", *s)
	shown = append(shown, logs.String())
	raw, err := json.Marshal(map[string]any{"signer": s}) // as inside a config dump
	require.NoError(t, err)
	shown = append(shown, string(raw))

	for _, out := range shown {
		assert.NotContains(t, out, seed)
		assert.NotContains(t, out, seed[1:20], "not even part of it")
	}
	assert.Contains(t, fmt.Sprintf("%v", s), payoutKey.Address(), "it is shown by its address")
}

func TestFileSignerRefusesBadFiles(t *testing.T) {
	seed := payoutKey.Seed()
	typo := seed[:10] + string(rune('A'+(seed[10]-'A'+1)%26)) + seed[11:]
	cases := []struct {
		name    string
		content string
		mode    os.FileMode
		dir     bool
		missing bool
		want    string // fragment of the error
	}{
		{name: "missing", missing: true, want: "no such file"},
		{name: "a directory", dir: true, want: "not a regular file"},
		{name: "empty", content: "", want: "empty"},
		{name: "only white space", content: " \n\t\n", want: "empty"},
		{name: "an account id", content: payoutKey.Address(), want: "account id, not a secret seed"},
		{name: "a typo in the seed", content: typo, want: "not hold a valid Stellar secret seed"},
		{name: "a cut seed", content: seed[:40], want: "not hold a valid Stellar secret seed"},
		{name: "two seeds", content: seed + "\n" + seed, want: "not hold a valid Stellar secret seed"},
		{name: "too large", content: seed + strings.Repeat(" ", 5000), want: "too large"},
		{name: "readable by everyone", content: seed, mode: 0o644, want: "open to every user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mode&0o007 != 0 && runtime.GOOS == "windows" {
				t.Skip("no Unix permissions")
			}
			path := filepath.Join(t.TempDir(), "seed")
			switch {
			case tc.missing:
			case tc.dir:
				require.NoError(t, os.Mkdir(path, 0o700))
			default:
				mode := tc.mode
				if mode == 0 {
					mode = 0o600
				}
				require.NoError(t, os.WriteFile(path, []byte(tc.content), mode))
				require.NoError(t, os.Chmod(path, mode)) // past the umask
			}
			s, err := payout.NewFileSigner(path)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), seed[1:20], "the error never shows the seed")
			assert.NotContains(t, err.Error(), typo[1:20])
		})
	}
}
