package creatorstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certHosts are the names the server's certificate is valid for: every
// host a client of Client() may ask for, so that TLS is never what stops a
// request. The forbidden hosts are included on purpose: a short-link
// follower that wrongly went there must succeed in reaching this server,
// where the visit is recorded, rather than fail on a certificate.
func certHosts() []string {
	names := []string{"localhost", "creatorsapi.amazon", EvilHost,
		"api.amazon.com", "api.amazon.co.uk", "api.amazon.co.jp"}
	for h := range shortLinkHosts {
		names = append(names, h)
	}
	for bare := range storefronts {
		names = append(names, bare, "www."+bare)
	}
	return names
}

// newCertificate makes a self-signed certificate for certHosts, loopback
// and IPLiteralHost, and returns it with the pool a client must trust.
func newCertificate() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("creatorstest: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("creatorstest: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"Memocart creatorstest"}, CommonName: "creatorstest"},
		// Valid from a little in the past so a skewed clock does not
		// reject it, for long enough to outlive any dev session.
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		// Self-signed and trusted as a root, like httptest's own cert.
		IsCA:        true,
		DNSNames:    certHosts(),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(IPLiteralHost)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("creatorstest: certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("creatorstest: certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
