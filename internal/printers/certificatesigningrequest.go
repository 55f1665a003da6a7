package printers

import (
	"time"

	"skiff.dev/internal/csr"
	"skiff.dev/internal/object"
	certificatesv1 "skiff.dev/proto/certificates/v1"
)

// csrTable are Kubernetes' columns of a CertificateSigningRequest: who
// asked which signer for how long, and where the request stands.
var csrTable = kindTable{[]Column{
	nameColumn,
	ageColumn,
	column("SignerName", doc("certificates/v1.CertificateSigningRequestSpec", "signerName")),
	column("Requestor", doc("certificates/v1.CertificateSigningRequestSpec", "request")),
	column("RequestedDuration", doc("certificates/v1.CertificateSigningRequestSpec", "expirationSeconds")),
	column("Condition", doc("certificates/v1.CertificateSigningRequestStatus", "conditions")),
}, func(obj object.Object, now time.Time) []any {
	c := obj.(*certificatesv1.CertificateSigningRequest)
	duration := "<none>"
	if spec := c.GetSpec(); spec != nil && spec.ExpirationSeconds != nil {
		duration = HumanDuration(time.Duration(spec.GetExpirationSeconds()) * time.Second)
	}
	return []any{c.GetMetadata().GetName(), Age(c.GetMetadata().GetCreationTimestamp(), now),
		c.GetSpec().GetSignerName(), c.GetSpec().GetUsername(), duration, csrCondition(c)}
}}

// csrCondition is Kubernetes' CONDITION of a CSR: Denied, Approved or
// Pending, then ",Failed" and ",Issued" when they hold.
func csrCondition(c *certificatesv1.CertificateSigningRequest) string {
	s := "Pending"
	if csr.Condition(c, csr.Denied) != nil {
		s = "Denied"
	} else if csr.Condition(c, csr.Approved) != nil {
		s = "Approved"
	}
	if csr.Condition(c, csr.Failed) != nil {
		s += ",Failed"
	}
	if len(c.GetStatus().GetCertificate()) > 0 {
		s += ",Issued"
	}
	return s
}
