package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/csr"
	"skiff.dev/internal/field"
	certificatesv1 "skiff.dev/proto/certificates/v1"
)

// CertificateSigningRequest validates a CSR as Kubernetes'
// certificates.k8s.io/v1 does: a DNS subdomain name; spec.request a PEM
// CERTIFICATE REQUEST that parses and whose signature checks; usages
// given, known and not repeated; signerName a domain-qualified path (not
// the legacy signer); expirationSeconds at least 600; conditions of a
// known status, Approved and Denied only True and exclusive, no type
// twice; status.certificate, when set, PEM CERTIFICATE blocks and only on
// an Approved request.
func CertificateSigningRequest(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	if c == nil {
		c = &certificatesv1.CertificateSigningRequest{}
	}
	errs := ObjectMeta(c.Metadata, false, NameIsDNSSubdomain, field.NewPath("metadata"))
	spec, sp := c.GetSpec(), field.NewPath("spec")
	if _, err := csr.ParseRequest(spec.GetRequest()); err != nil {
		errs = append(errs, field.Invalid(sp.Child("request"), "<request data>", err.Error()))
	}
	if len(spec.GetUsages()) == 0 {
		errs = append(errs, field.Required(sp.Child("usages"), "usages must be provided"))
	}
	known := csr.KnownUsages()
	for i, u := range spec.GetUsages() {
		if !slices.Contains(known, u) {
			errs = append(errs, field.NotSupported(sp.Child("usages").Index(i), u, known))
		}
		if slices.Contains(spec.GetUsages()[:i], u) {
			errs = append(errs, field.Duplicate(sp.Child("usages").Index(i), u))
		}
	}
	if spec.GetSignerName() == csr.LegacyUnknown {
		errs = append(errs, field.Invalid(sp.Child("signerName"), spec.GetSignerName(), "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, signerName(spec.GetSignerName(), sp.Child("signerName"))...)
	}
	if s := spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(sp.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, csrConditions(c.GetStatus().GetConditions(), field.NewPath("status", "conditions"))...)
	if cert := c.GetStatus().GetCertificate(); len(cert) > 0 {
		certPath := field.NewPath("status", "certificate")
		if err := certificateChain(cert); err != nil {
			errs = append(errs, field.Invalid(certPath, "<certificate data>", err.Error()))
		}
		if !csr.IsApproved(c) {
			errs = append(errs, field.Forbidden(certPath, "a certificate may only be set on an Approved request"))
		}
	}
	return errs
}

// CertificateSigningRequestUpdate validates an update of a CSR: the new
// object as any CSR, its spec unchanged (Kubernetes keeps the stored spec
// on every update; Skiff refuses a change instead of dropping it), no
// Approved, Denied or Failed condition removed, and neither the approval
// conditions nor the certificate changed (those are the approval's and the
// status subresource's).
func CertificateSigningRequestUpdate(newC, oldC *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return csrUpdate(newC, oldC, false, false)
}

// CertificateSigningRequestStatusUpdate validates the signer's update
// (the status subresource): as CertificateSigningRequestUpdate, but the
// certificate may be set once.
func CertificateSigningRequestStatusUpdate(newC, oldC *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return csrUpdate(newC, oldC, false, true)
}

// CertificateSigningRequestApprovalUpdate validates the approver's update
// (the approval subresource): as CertificateSigningRequestUpdate, but an
// Approved or Denied condition may be added.
func CertificateSigningRequestApprovalUpdate(newC, oldC *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return csrUpdate(newC, oldC, true, false)
}

func csrUpdate(newC, oldC *certificatesv1.CertificateSigningRequest, approval, certificate bool) field.ErrorList {
	errs := ObjectMetaUpdate(newC.GetMetadata(), oldC.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, CertificateSigningRequest(newC)...)
	if !proto.Equal(newC.GetSpec(), oldC.GetSpec()) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation"))
	}
	conds := field.NewPath("status", "conditions")
	for _, t := range []string{csr.Approved, csr.Denied, csr.Failed} {
		if countConditions(newC, t) < countConditions(oldC, t) {
			errs = append(errs, field.Forbidden(conds, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !approval {
		for _, t := range []string{csr.Approved, csr.Denied} {
			if countConditions(newC, t) > countConditions(oldC, t) {
				errs = append(errs, field.Forbidden(conds, fmt.Sprintf("updates may not add a condition of type %q", t)))
			}
		}
	}
	certPath := field.NewPath("status", "certificate")
	newCert, oldCert := newC.GetStatus().GetCertificate(), oldC.GetStatus().GetCertificate()
	switch {
	case bytes.Equal(newCert, oldCert):
	case !certificate:
		errs = append(errs, field.Forbidden(certPath, "updates may not set certificate content"))
	case len(oldCert) > 0:
		errs = append(errs, field.Forbidden(certPath, "updates may not modify existing certificate content"))
	}
	return errs
}

func countConditions(c *certificatesv1.CertificateSigningRequest, t string) int {
	n := 0
	for _, cond := range c.GetStatus().GetConditions() {
		if cond.GetType() == t {
			n++
		}
	}
	return n
}

// csrConditions: a type and a known status each, Approved and Denied only
// True and not both, no type twice (Kubernetes' validateConditions).
func csrConditions(conds []*certificatesv1.CertificateSigningRequestCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range conds {
		ip := p.Index(i)
		if c.GetType() == "" {
			errs = append(errs, field.Required(ip.Child("type"), ""))
		}
		if c.GetStatus() == "" {
			errs = append(errs, field.Required(ip.Child("status"), ""))
		} else if !slices.Contains(conditionStatuses, c.GetStatus()) {
			errs = append(errs, field.NotSupported(ip.Child("status"), c.GetStatus(), conditionStatuses))
		}
		if t := c.GetType(); (t == csr.Approved || t == csr.Denied) && c.GetStatus() != csr.True {
			errs = append(errs, field.Invalid(ip.Child("status"), c.GetStatus(), t+" condition may only be set to True"))
		}
		if seen[c.GetType()] {
			errs = append(errs, field.Duplicate(ip.Child("type"), c.GetType()))
		}
		seen[c.GetType()] = true
	}
	if seen[csr.Approved] && seen[csr.Denied] {
		errs = append(errs, field.Invalid(p, "", "Approved and Denied conditions are mutually exclusive"))
	}
	return errs
}

// certificateChain: one or more PEM CERTIFICATE blocks without headers,
// each a certificate (text around the blocks allowed).
func certificateChain(data []byte) error {
	blocks := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// signerName: "<domain>/<path>", the domain a DNS subdomain of at least
// two labels, the path a DNS subdomain (Kubernetes' ValidateSignerName).
func signerName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	const maxDomain, maxPath = 253, 253 + 63 + 1
	var errs field.ErrorList
	if len(segments[0]) > maxDomain {
		errs = append(errs, field.TooLong(p, maxDomain))
	}
	errs = append(errs, invalidEach(p, segments[0], isDNS1123Subdomain(segments[0]))...)
	if !strings.Contains(segments[0], ".") {
		errs = append(errs, field.Invalid(p, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	if len(name) > maxDomain+maxPath+1 {
		errs = append(errs, field.TooLong(p, maxDomain+maxPath+1))
	}
	if len(segments[1]) > maxPath {
		errs = append(errs, field.TooLong(p, maxPath))
	}
	return append(errs, invalidEach(p, segments[1], isDNS1123Subdomain(segments[1]))...)
}
