// Package payout sends refunds from Memocart's payout account on Stellar,
// each exactly once, through Horizon. Its Payer is the live adapter of the
// refund activities' payer port (activities.Payer), in the domain's terms
// (models.PayoutRequest, models.PayoutResult, models.ErrPayout*).
//
// A Payer builds a payment with short time bounds, has the caller record
// its hash and signed envelope, and only then submits it. Every later
// attempt starts from what was recorded: it looks the hash up, submits the
// very same envelope again while it may still apply, and builds another
// only once Horizon's history reaches past the old one's time bounds
// without it. A crash, a timeout or a lost answer at any point therefore
// ends in one payment, never two.
//
// VerifyPayment checks, for an operator's mark-sent, that a transaction
// paid from another wallet paid a refund.
//
// The secret key stays behind Signer: a FileSigner reads it from a file,
// and a KMS or remote signer can take its place.
//
// It may import models, shopspring/decimal, the standard library,
// stellar/resultcodes and the Stellar SDK's txnbuild, keypair, network,
// amount and xdr packages.
package payout
