package sandbox

// PaymentAddress is the receiving account test-mode orders show as
// payment_address (MEMOCART_SANDBOX_PAYMENT_ADDRESS's default). Nothing is
// ever sent there: sandbox payments are made through the test helper, never
// on a chain.
//
// It is a well-formed Stellar account id, so wallets and SEP-0007 parsers
// accept the test-mode payment link, but it is not a real key: its 32 "key"
// bytes are the ASCII text PaymentAddressKey, encoded with
// models.StellarAccountID (version byte, then a CRC16-XModem checksum).
// Nobody generated it from a secret seed, so nobody holds one for it, and
// money sent to it by mistake on a real network could never be moved. The
// tests check that it is exactly that encoding and passes
// models.ValidateStellarAccount.
const PaymentAddress = "GBGUKTKPINAVEVBAKNAU4RCCJ5MDUICOIVLEKURAIZKU4RCFIQXCAWHJ"

// PaymentAddressKey is the text whose bytes PaymentAddress encodes in
// place of an ed25519 public key.
const PaymentAddressKey = "MEMOCART SANDBOX: NEVER FUNDED. "
