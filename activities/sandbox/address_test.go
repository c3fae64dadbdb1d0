package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/models"
)

// The sandbox receiving account must pass the same StrKey check a wallet
// makes (version byte, base32, CRC16 checksum), and be the documented
// encoding of fixed, obviously fake key bytes.
func TestPaymentAddressIsAValidStellarAccount(t *testing.T) {
	require.NoError(t, models.ValidateStellarAccount(sandbox.PaymentAddress))

	require.Len(t, sandbox.PaymentAddressKey, 32)
	var key [32]byte
	copy(key[:], sandbox.PaymentAddressKey)
	assert.Equal(t, models.StellarAccountID(key), sandbox.PaymentAddress,
		"PaymentAddress is the StrKey of PaymentAddressKey's bytes")
}
