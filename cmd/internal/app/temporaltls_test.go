package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test temporal CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &testCA{cert: cert, key: key, dir: t.TempDir()}
	writePEM(t, ca.path("ca.pem"), "CERTIFICATE", der)
	return ca
}

func (ca *testCA) path(name string) string { return filepath.Join(ca.dir, name) }

// issue writes name.pem and name-key.pem: a certificate for cn, valid for
// the DNS names given (a server) or for client authentication (none given).
func (ca *testCA) issue(t *testing.T, name, cn string, dnsNames ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, DNSNames: dnsNames,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(dnsNames) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	writePEM(t, ca.path(name+".pem"), "CERTIFICATE", der)
	writePEM(t, ca.path(name+"-key.pem"), "EC PRIVATE KEY", keyDER)
	pair, err := tls.LoadX509KeyPair(ca.path(name+".pem"), ca.path(name+"-key.pem"))
	require.NoError(t, err)
	return pair
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// fakeFrontend is a Temporal frontend as far as dialling goes: the gRPC
// WorkflowService over TLS, answering GetSystemInfo (the call the SDK makes
// when it connects), enforcing a client certificate signed by the test CA
// and/or an API key the way Temporal Cloud does (authorization: Bearer).
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	apiKey string // "" = not checked

	mu        sync.Mutex
	clientCNs []string // of each call's verified client certificate
	calls     atomic.Int32
}

func (f *fakeFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	f.calls.Add(1)
	if f.apiKey != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+f.apiKey {
			return nil, status.Error(codes.Unauthenticated, "invalid API key")
		}
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			f.mu.Lock()
			f.clientCNs = append(f.clientCNs, ti.State.VerifiedChains[0][0].Subject.CommonName)
			f.mu.Unlock()
		}
	}
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (f *fakeFrontend) seenClients() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.clientCNs...)
}

// serve starts f on a 127.0.0.1 port with the server certificate given,
// requiring client certificates from ca when mTLS is set.
func (f *fakeFrontend) serve(t *testing.T, ca *testCA, serverCert tls.Certificate, mTLS bool) string {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
	if mTLS {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	workflowservice.RegisterWorkflowServiceServer(srv, f)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// tlsEnv is an env whose configuration comes from the variables given, as
// the process reads them.
func tlsEnv(t *testing.T, vars map[string]string) (Env, error) {
	t.Helper()
	cfg, err := loadConfig(func(k string) string { return vars[k] })
	return Env{Cfg: cfg, Log: slog.New(slog.DiscardHandler)}, err
}

func dialOnce(t *testing.T, e Env, addr string) error {
	t.Helper()
	opts, err := TemporalOptions(e, addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err == nil {
		c.Close()
	}
	return err
}

func TestTemporalMTLS(t *testing.T) {
	ca := newTestCA(t)
	front := &fakeFrontend{}
	addr := front.serve(t, ca, ca.issue(t, "server", "temporal", "temporal.internal"), true)
	ca.issue(t, "worker", "memocart-worker")

	vars := map[string]string{
		"MEMOCART_TEMPORAL_TLS_CA_FILE":     ca.path("ca.pem"),
		"MEMOCART_TEMPORAL_TLS_CERT_FILE":   ca.path("worker.pem"),
		"MEMOCART_TEMPORAL_TLS_KEY_FILE":    ca.path("worker-key.pem"),
		"MEMOCART_TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
	}
	e, err := tlsEnv(t, vars)
	require.NoError(t, err)
	require.NoError(t, dialOnce(t, e, addr))
	assert.Equal(t, []string{"memocart-worker"}, front.seenClients())

	t.Run("rotated certificate used by the next connection", func(t *testing.T) {
		ca.issue(t, "worker", "memocart-worker-rotated") // same files, new contents
		require.NoError(t, dialOnce(t, e, addr))
		assert.Equal(t, []string{"memocart-worker", "memocart-worker-rotated"}, front.seenClients())
	})
	t.Run("without a client certificate", func(t *testing.T) {
		e, err := tlsEnv(t, map[string]string{
			"MEMOCART_TEMPORAL_TLS_CA_FILE":     ca.path("ca.pem"),
			"MEMOCART_TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
		})
		require.NoError(t, err)
		assert.Error(t, dialOnce(t, e, addr))
	})
	t.Run("server name not in the certificate", func(t *testing.T) {
		v := map[string]string{}
		for k, val := range vars {
			v[k] = val
		}
		delete(v, "MEMOCART_TEMPORAL_TLS_SERVER_NAME") // the certificate names temporal.internal, not 127.0.0.1
		e, err := tlsEnv(t, v)
		require.NoError(t, err)
		err = dialOnce(t, e, addr)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate")
	})
	t.Run("plain gRPC to a TLS server", func(t *testing.T) {
		e, err := tlsEnv(t, map[string]string{})
		require.NoError(t, err)
		assert.Error(t, dialOnce(t, e, addr))
	})
}

func TestTemporalAPIKey(t *testing.T) {
	ca := newTestCA(t)
	front := &fakeFrontend{apiKey: "cloud-key-1"}
	addr := front.serve(t, ca, ca.issue(t, "server", "temporal", "localhost"), false)
	vars := func(key string) map[string]string {
		return map[string]string{
			"MEMOCART_TEMPORAL_TLS_CA_FILE":     ca.path("ca.pem"),
			"MEMOCART_TEMPORAL_TLS_SERVER_NAME": "localhost",
			"MEMOCART_TEMPORAL_API_KEY":         key,
		}
	}
	e, err := tlsEnv(t, vars("cloud-key-1"))
	require.NoError(t, err)
	assert.True(t, e.Cfg.TemporalSecurity.TLS(), "an API key turns TLS on")
	c, err := DialTemporal(t.Context(), e, addr)
	require.NoError(t, err)
	c.Close()

	// A wrong key is refused at once, not retried for a minute.
	e, err = tlsEnv(t, vars("wrong"))
	require.NoError(t, err)
	before := front.calls.Load()
	_, err = DialTemporal(t.Context(), e, addr)
	require.Error(t, err)
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	assert.Contains(t, err.Error(), "refused the credentials")
	assert.Equal(t, int32(1), front.calls.Load()-before, "one attempt")
	assert.NotContains(t, e.Cfg.Masked(func(k string) string { return vars("wrong")[k] }), "wrong", "the key is Masked in the start-up log")
}

func TestTemporalSecurityConfig(t *testing.T) {
	ca := newTestCA(t)
	ca.issue(t, "worker", "memocart-worker")
	require.NoError(t, os.WriteFile(ca.path("junk.pem"), []byte("not a certificate"), 0o600))

	for _, tc := range []struct {
		name string
		vars map[string]string
		err  string // "" = valid
	}{
		{"nothing: plain gRPC", map[string]string{}, ""},
		{"TLS with the system roots", map[string]string{"MEMOCART_TEMPORAL_TLS": "true"}, ""},
		{"certificate without key", map[string]string{"MEMOCART_TEMPORAL_TLS_CERT_FILE": ca.path("worker.pem")}, "go together"},
		{"key without certificate", map[string]string{"MEMOCART_TEMPORAL_TLS_KEY_FILE": ca.path("worker-key.pem")}, "go together"},
		{"API key in the clear", map[string]string{"MEMOCART_TEMPORAL_TLS": "false", "MEMOCART_TEMPORAL_API_KEY": "k"}, "need TLS"},
		{"missing CA file", map[string]string{"MEMOCART_TEMPORAL_TLS_CA_FILE": ca.path("nope.pem")}, "MEMOCART_TEMPORAL_TLS_CA_FILE"},
		{"CA file without a certificate", map[string]string{"MEMOCART_TEMPORAL_TLS_CA_FILE": ca.path("junk.pem")}, "no PEM certificate"},
		{"key that does not match", map[string]string{
			"MEMOCART_TEMPORAL_TLS_CERT_FILE": ca.path("worker.pem"), "MEMOCART_TEMPORAL_TLS_KEY_FILE": ca.path("junk.pem"),
		}, "MEMOCART_TEMPORAL_TLS_CERT_FILE"},
		{"not a boolean", map[string]string{"MEMOCART_TEMPORAL_TLS": "yes please"}, "MEMOCART_TEMPORAL_TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tlsEnv(t, tc.vars)
			if tc.err == "" {
				require.NoError(t, err)
				opts, err := TemporalOptions(e, "127.0.0.1:7233")
				require.NoError(t, err)
				assert.Equal(t, tc.vars["MEMOCART_TEMPORAL_TLS"] == "true", opts.ConnectionOptions.TLS != nil)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tc.err), "%q lacks %q", err, tc.err)
		})
	}
}

// TestTemporalCompression: gzip unless MEMOCART_TEMPORAL_COMPRESSION says
// none; anything else is refused.
func TestTemporalCompression(t *testing.T) {
	for v, want := range map[string]client.GrpcCompression{"": nil, "gzip": nil, "none": &client.GrpcCompressionNone{}} {
		e, err := tlsEnv(t, map[string]string{"MEMOCART_TEMPORAL_COMPRESSION": v})
		require.NoError(t, err)
		opts, err := TemporalOptions(e, "127.0.0.1:7233")
		require.NoError(t, err)
		assert.Equal(t, want, opts.ConnectionOptions.GrpcCompression, "%q", v)
	}
	_, err := tlsEnv(t, map[string]string{"MEMOCART_TEMPORAL_COMPRESSION": "zstd"})
	assert.ErrorContains(t, err, "MEMOCART_TEMPORAL_COMPRESSION")
}
