package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"

	"go.temporal.io/sdk/client"
)

// TemporalSecurity is how api, worker and the operator commands reach a
// Temporal cluster other than dev's embedded one: over TLS, with a client
// certificate (mTLS, self-hosted clusters and Temporal Cloud) and/or an API
// key (Temporal Cloud). The zero value is plain gRPC.
type TemporalSecurity struct {
	// TLSMode is MEMOCART_TEMPORAL_TLS: "" (on when any other setting
	// below is given), "true" or "false".
	TLSMode    string
	CAFile     string // PEM roots that sign the server's certificate; empty = the system's
	CertFile   string // client certificate chain (PEM), with KeyFile
	KeyFile    string
	ServerName string // expected name in the server's certificate; empty = the dialled host
	APIKey     string // sent as "authorization: Bearer" on every call, over TLS only
}

// TLS reports whether the connection is encrypted.
func (s TemporalSecurity) TLS() bool {
	if s.TLSMode != "" {
		return s.TLSMode == "true"
	}
	return s.CAFile != "" || s.CertFile != "" || s.ServerName != "" || s.APIKey != ""
}

// Configured reports whether any setting departs from plain gRPC.
func (s TemporalSecurity) Configured() bool { return s.TLS() || s.APIKey != "" }

// validate checks the combination and reads every file once, so a missing
// or malformed certificate stops the process at start with the variable's
// name rather than at the first handshake.
func (s TemporalSecurity) validate() error {
	if s.TLSMode == "false" {
		var set []string
		for _, v := range []struct{ name, val string }{
			{"MEMOCART_TEMPORAL_TLS_CA_FILE", s.CAFile}, {"MEMOCART_TEMPORAL_TLS_CERT_FILE", s.CertFile},
			{"MEMOCART_TEMPORAL_TLS_SERVER_NAME", s.ServerName}, {"MEMOCART_TEMPORAL_API_KEY", s.APIKey},
		} {
			if v.val != "" {
				set = append(set, v.name)
			}
		}
		if len(set) > 0 {
			// An API key sent in the clear is a leaked key.
			return fmt.Errorf("MEMOCART_TEMPORAL_TLS is false but %v is set: these need TLS", set)
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("MEMOCART_TEMPORAL_TLS_CERT_FILE and MEMOCART_TEMPORAL_TLS_KEY_FILE go together: set both for mTLS, or neither")
	}
	if s.CAFile != "" {
		if _, err := loadRoots(s.CAFile); err != nil {
			return fmt.Errorf("MEMOCART_TEMPORAL_TLS_CA_FILE: %w", err)
		}
	}
	if s.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile); err != nil {
			return fmt.Errorf("MEMOCART_TEMPORAL_TLS_CERT_FILE/_KEY_FILE: %w", err)
		}
	}
	return nil
}

// apply sets the connection options and credentials of opts.
//
// The client certificate is read from its files at each TLS handshake, not
// once at start: certificates for Temporal are short-lived and rotated on
// disk (cert-manager, Vault), and a worker must reconnect with the new one
// without a restart. Handshakes happen only when a connection is opened, so
// the reads cost nothing per call.
func (s TemporalSecurity) apply(opts *client.Options) error {
	if !s.TLS() {
		opts.ConnectionOptions.TLSDisabled = true
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		roots, err := loadRoots(s.CAFile)
		if err != nil {
			return fmt.Errorf("MEMOCART_TEMPORAL_TLS_CA_FILE: %w", err)
		}
		cfg.RootCAs = roots
	}
	if s.CertFile != "" {
		certFile, keyFile := s.CertFile, s.KeyFile
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("loading the Temporal client certificate: %w", err)
			}
			return &cert, nil
		}
	}
	opts.ConnectionOptions.TLS = cfg
	if s.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(s.APIKey)
	}
	return nil
}

func loadRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func parseTLSMode(v string, dst *string) error {
	if v == "" {
		*dst = ""
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("must be true, false or empty (on when a certificate, CA or API key is set)")
	}
	*dst = strconv.FormatBool(b)
	return nil
}
