package placement

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Keys of the TLS Secret. The type is kubernetes.io/tls, so tls.crt and
// tls.key are the serving pair; the others are Basin's.
const (
	secretCACert   = "ca.crt"
	secretCAKey    = "ca.key"
	secretCABundle = "ca-bundle.crt" // the current CA and the previous one while it is valid
	secretCert     = "tls.crt"
	secretKey      = "tls.key"
)

// errCertificate is wrapped by the errors of this file.
var errCertificate = errors.New("placement: certificate")

// keyPair is a PEM certificate and its PEM private key, parsed.
type keyPair struct {
	certPEM, keyPEM []byte
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// parseKeyPair parses PEM text; nil when either half is missing or bad.
func parseKeyPair(certPEM, keyPEM []byte) *keyPair {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil || !key.PublicKey.Equal(cert.PublicKey) {
		return nil
	}
	return &keyPair{certPEM: certPEM, keyPEM: keyPEM, cert: cert, key: key}
}

// dueAt is when a certificate is renewed: two thirds into its life.
func dueAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// newCA makes a self-signed ECDSA P-256 CA valid for lifetime.
func newCA(now time.Time, lifetime time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "basin-placement-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil, now, lifetime)
}

// issue makes a serving certificate for hosts (DNS names or IP
// addresses) signed by ca.
func issue(ca *keyPair, hosts []string, now time.Time, lifetime time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(tmpl, ca, now, lifetime)
}

// sign completes tmpl with a fresh key, serial and validity and signs it
// with parent (itself when nil).
func sign(tmpl *x509.Certificate, parent *keyPair, now time.Time, lifetime time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCertificate, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCertificate, err)
	}
	tmpl.SerialNumber = serial
	// A little back-dating absorbs clock skew between the nodes.
	tmpl.NotBefore = now.Add(-5 * time.Minute)
	tmpl.NotAfter = now.Add(lifetime)
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCertificate, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCertificate, err)
	}
	kp := parseKeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if kp == nil {
		return nil, fmt.Errorf("%w: the new certificate does not parse", errCertificate)
	}
	return kp, nil
}

// serves reports whether leaf is signed by ca, valid at now and not yet
// due, and names every host.
func serves(leaf, ca *keyPair, hosts []string, now time.Time) bool {
	if leaf == nil || ca == nil || !now.Before(dueAt(leaf.cert)) || now.Before(leaf.cert.NotBefore) {
		return false
	}
	if leaf.cert.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	for _, h := range hosts {
		if leaf.cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// bundle is the PEM CA bundle for the webhook configuration: ca, then the
// certificates of old that are other CAs still valid at now (so that a
// replica serving a certificate of the previous CA stays trusted until
// it reloads).
func bundle(ca *keyPair, old []byte, now time.Time) []byte {
	out := slices.Clone(ca.certPEM)
	for rest := old; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil || !c.IsCA || c.Equal(ca.cert) || !now.Before(c.NotAfter) {
			continue
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
}

// tlsCertificate is kp for a tls.Config, with its chain.
func (kp *keyPair) tlsCertificate() (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(kp.certPEM, kp.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCertificate, err)
	}
	return &c, nil
}
