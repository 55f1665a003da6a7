// Package csr is what a certificates.k8s.io/v1 CertificateSigningRequest
// means, shared by the apiserver (validation, the requester's identity),
// the controller-manager (the approver and the signer), skiffctl and the
// node agent that asks for its certificates: the well-known signer names,
// the key usages and their X.509 meaning, the request's PEM, the
// conditions, and Kubernetes' checks of a kubelet's client and serving
// requests (k8s.io/kubernetes/pkg/apis/certificates/v1/helpers.go).
//
// It decides; it does not write objects or sign (the signer's package
// does).
package csr

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	certificatesv1 "skiff.dev/proto/certificates/v1"
)

// Kubernetes' well-known signers.
const (
	// KubeAPIServerClient signs client certificates the apiserver honours;
	// never approved automatically.
	KubeAPIServerClient = "kubernetes.io/kube-apiserver-client"
	// KubeAPIServerClientKubelet signs node agents' client certificates
	// (CN system:node:<name>, O system:nodes).
	KubeAPIServerClientKubelet = "kubernetes.io/kube-apiserver-client-kubelet"
	// KubeletServing signs node agents' serving certificates.
	KubeletServing = "kubernetes.io/kubelet-serving"
	// LegacyUnknown is certificates.k8s.io/v1beta1's default signer, which
	// v1 refuses.
	LegacyUnknown = "kubernetes.io/legacy-unknown"
)

// Condition types and the status a condition holds.
const (
	Approved = "Approved"
	Denied   = "Denied"
	Failed   = "Failed"
	True     = "True"
)

// Key usages, as Kubernetes' certificates.KeyUsage spells them.
const (
	UsageDigitalSignature = "digital signature"
	UsageKeyEncipherment  = "key encipherment"
	UsageClientAuth       = "client auth"
	UsageServerAuth       = "server auth"
)

// keyUsages and extKeyUsages are every usage a request may ask for, with
// its X.509 meaning (Kubernetes' keyUsageDict and extKeyUsageDict).
var (
	keyUsages = map[string]x509.KeyUsage{
		"signing":             x509.KeyUsageDigitalSignature,
		UsageDigitalSignature: x509.KeyUsageDigitalSignature,
		"content commitment":  x509.KeyUsageContentCommitment,
		UsageKeyEncipherment:  x509.KeyUsageKeyEncipherment,
		"key agreement":       x509.KeyUsageKeyAgreement,
		"data encipherment":   x509.KeyUsageDataEncipherment,
		"cert sign":           x509.KeyUsageCertSign,
		"crl sign":            x509.KeyUsageCRLSign,
		"encipher only":       x509.KeyUsageEncipherOnly,
		"decipher only":       x509.KeyUsageDecipherOnly,
	}
	extKeyUsages = map[string]x509.ExtKeyUsage{
		"any":              x509.ExtKeyUsageAny,
		UsageServerAuth:    x509.ExtKeyUsageServerAuth,
		UsageClientAuth:    x509.ExtKeyUsageClientAuth,
		"code signing":     x509.ExtKeyUsageCodeSigning,
		"email protection": x509.ExtKeyUsageEmailProtection,
		"s/mime":           x509.ExtKeyUsageEmailProtection,
		"ipsec end system": x509.ExtKeyUsageIPSECEndSystem,
		"ipsec tunnel":     x509.ExtKeyUsageIPSECTunnel,
		"ipsec user":       x509.ExtKeyUsageIPSECUser,
		"timestamping":     x509.ExtKeyUsageTimeStamping,
		"ocsp signing":     x509.ExtKeyUsageOCSPSigning,
		"microsoft sgc":    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
		"netscape sgc":     x509.ExtKeyUsageNetscapeServerGatedCrypto,
	}
)

// KnownUsages are the usages a request may name, sorted.
func KnownUsages() []string {
	all := make([]string, 0, len(keyUsages)+len(extKeyUsages))
	for u := range keyUsages {
		all = append(all, u)
	}
	for u := range extKeyUsages {
		all = append(all, u)
	}
	slices.Sort(all)
	return all
}

// X509Usages is the key usage and extended key usages usages stand for;
// an unknown usage is an error.
func X509Usages(usages []string) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var ext []x509.ExtKeyUsage
	for _, u := range usages {
		if k, ok := keyUsages[u]; ok {
			ku |= k
		} else if e, ok := extKeyUsages[u]; ok {
			if !slices.Contains(ext, e) {
				ext = append(ext, e)
			}
		} else {
			return 0, nil, fmt.Errorf("unknown key usage %q", u)
		}
	}
	return ku, ext, nil
}

// ParseRequest decodes the PEM "CERTIFICATE REQUEST" of a CSR's
// spec.request and checks its signature (the requester holds the key).
func ParseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := req.CheckSignature(); err != nil {
		return nil, err
	}
	return req, nil
}

// EncodeRequest is the PEM of a DER certificate request, as spec.request
// holds it.
func EncodeRequest(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// Condition is the CSR's condition of type t, or nil.
func Condition(c *certificatesv1.CertificateSigningRequest, t string) *certificatesv1.CertificateSigningRequestCondition {
	for _, cond := range c.GetStatus().GetConditions() {
		if cond.GetType() == t {
			return cond
		}
	}
	return nil
}

// HasTrue says whether the CSR has condition t with status True.
func HasTrue(c *certificatesv1.CertificateSigningRequest, t string) bool {
	return Condition(c, t).GetStatus() == True
}

// IsApproved: Approved and not Denied, as Kubernetes'
// IsCertificateRequestApproved.
func IsApproved(c *certificatesv1.CertificateSigningRequest) bool {
	return HasTrue(c, Approved) && !HasTrue(c, Denied)
}

// Pending: neither Approved nor Denied nor Failed yet.
func Pending(c *certificatesv1.CertificateSigningRequest) bool {
	return !HasTrue(c, Approved) && !HasTrue(c, Denied) && !HasTrue(c, Failed)
}

// NodeUserPrefix and NodesGroup are a node agent's identity: user
// system:node:<name> in group system:nodes.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

var (
	kubeletClientUsages      = []string{UsageClientAuth, UsageDigitalSignature, UsageKeyEncipherment}
	kubeletClientUsagesNoRSA = []string{UsageClientAuth, UsageDigitalSignature}
	kubeletServingUsages     = []string{UsageDigitalSignature, UsageKeyEncipherment, UsageServerAuth}
	kubeletServingNoRSA      = []string{UsageDigitalSignature, UsageServerAuth}
)

// sameSet says whether usages, as a set, is want (sorted).
func sameSet(usages, want []string) bool {
	s := slices.Clone(usages)
	slices.Sort(s)
	return slices.Equal(slices.Compact(s), want)
}

// ValidateKubeletClient says why req with usages is not a node agent's
// client certificate request (nil when it is): O exactly system:nodes, CN
// system:node:<name>, no subject alternative names, usages client auth and
// digital signature (key encipherment allowed). Kubernetes'
// ValidateKubeletClientCSR, in its order and words.
func ValidateKubeletClient(req *x509.CertificateRequest, usages []string) error {
	if !reflect.DeepEqual([]string{NodesGroup}, req.Subject.Organization) {
		return errors.New("subject organization is not system:nodes")
	}
	switch {
	case len(req.DNSNames) > 0:
		return errors.New("DNS subjectAltNames are not allowed")
	case len(req.EmailAddresses) > 0:
		//lint:ignore ST1005 Kubernetes' words, which its users match on
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.IPAddresses) > 0:
		return errors.New("IP subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		return errors.New("subject common name does not begin with 'system:node:'")
	}
	if !sameSet(usages, kubeletClientUsages) && !sameSet(usages, kubeletClientUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", kubeletClientUsages)
	}
	return nil
}

// ValidateKubeletServing says why req with usages is not a node agent's
// serving certificate request (nil when it is): O exactly system:nodes, a
// DNS or IP subject alternative name, no email or URI ones, usages server
// auth and digital signature (key encipherment allowed), CN
// system:node:<name>. Kubernetes' ValidateKubeletServingCSR.
func ValidateKubeletServing(req *x509.CertificateRequest, usages []string) error {
	if !reflect.DeepEqual([]string{NodesGroup}, req.Subject.Organization) {
		return errors.New("subject organization is not system:nodes")
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errors.New("DNS or IP subjectAltName is required")
	case len(req.EmailAddresses) > 0:
		//lint:ignore ST1005 Kubernetes' words, which its users match on
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if !sameSet(usages, kubeletServingUsages) && !sameSet(usages, kubeletServingNoRSA) {
		return fmt.Errorf("usages did not match %v", kubeletServingUsages)
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		return errors.New("subject common name does not begin with 'system:node:'")
	}
	return nil
}

// ValidateAPIServerClient says why usages are not a client certificate's
// (kubernetes.io/kube-apiserver-client): client auth, and optionally
// digital signature and key encipherment. Kubernetes'
// validAPIServerClientUsages.
func ValidateAPIServerClient(usages []string) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case UsageDigitalSignature, UsageKeyEncipherment:
		case UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", UsageClientAuth)
	}
	return nil
}

// ValidateSelfClient says why req with usages, asked by username in
// groups, is not a client renewing its own client certificate (nil when
// it is): CN the requester, every O one of its groups, no subject
// alternative name, usages client auth and digital signature (key
// encipherment allowed). Skiff's own rule (Kubernetes approves no
// kube-apiserver-client request by itself): the controller-manager and the
// scheduler renew their certificates so (--rotate-certificates).
func ValidateSelfClient(req *x509.CertificateRequest, usages []string, username string, groups []string) error {
	switch {
	case req.Subject.CommonName != username:
		return fmt.Errorf("subject common name %q is not the requester %q", req.Subject.CommonName, username)
	case len(req.DNSNames)+len(req.EmailAddresses)+len(req.IPAddresses)+len(req.URIs) > 0:
		return errors.New("subjectAltNames are not allowed")
	case !sameSet(usages, kubeletClientUsages) && !sameSet(usages, kubeletClientUsagesNoRSA):
		return fmt.Errorf("usages did not match %v", kubeletClientUsages)
	}
	for _, o := range req.Subject.Organization {
		if !slices.Contains(groups, o) {
			return fmt.Errorf("subject organization %q is not a group of the requester", o)
		}
	}
	return nil
}
