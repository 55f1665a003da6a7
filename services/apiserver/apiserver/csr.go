package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/csr"
	"skiff.dev/internal/field"
	"skiff.dev/internal/validation"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// CertificateSigningRequests, as Kubernetes' certificates REST storage and
// its certificateapproval and certificatesigning admission plugins:
//
//   - Create records the requester (spec.username, uid, groups) from the
//     authenticated user, whatever the client sent;
//   - UpdateStatus (the signer's write) changes status only, keeps the
//     Approved and Denied conditions as stored, and needs the sign verb
//     on the signer when it changes the certificate;
//   - UpdateApproval (the approval subresource) changes status.conditions
//     only, and needs the approve verb on the signer.
//
// The signer check is a second authorization, beyond the chain's update of
// the subresource: verb approve (or sign) on resource signers of group
// certificates.k8s.io named by spec.signerName, or by its domain and "/*"
// ("kubernetes.io/*").

type csrType = certificatesv1.CertificateSigningRequest

// csrsServer is the CertificateSigningRequests service.
type csrsServer struct {
	*server.Endpoint[*csrType, *csrType, *certificatesv1.CertificateSigningRequestList, certificatesv1.CertificateSigningRequestWatchResponse]
	reg       *registry.Registry[*csrType]
	authorize func(ctx context.Context, ri *server.RequestInfo) error
	now       func() time.Time
}

// Create implements certificatesv1.CertificateSigningRequestsServer.
func (c *csrsServer) Create(ctx context.Context, req *csrType) (*csrType, error) {
	if !req.ProtoReflect().IsValid() {
		return c.Endpoint.Create(ctx, req)
	}
	obj := proto.Clone(req).(*csrType)
	if obj.Spec == nil {
		obj.Spec = &certificatesv1.CertificateSigningRequestSpec{}
	}
	obj.Spec.Username, obj.Spec.Uid, obj.Spec.Groups = "", "", nil
	if u := user.From(ctx); u != nil {
		obj.Spec.Username, obj.Spec.Uid, obj.Spec.Groups = u.Name, u.UID, append([]string(nil), u.Groups...)
	}
	return c.Endpoint.Create(ctx, obj)
}

// UpdateStatus implements certificatesv1.CertificateSigningRequestsServer.
func (c *csrsServer) UpdateStatus(ctx context.Context, req *csrType) (*csrType, error) {
	return c.updateConditions(ctx, req, "status", func(next, cur *csrType) error {
		next.Status = proto.Clone(req.GetStatus()).(*certificatesv1.CertificateSigningRequestStatus)
		if next.Status == nil {
			next.Status = &certificatesv1.CertificateSigningRequestStatus{}
		}
		preserveConditions(next, cur, csr.Approved)
		preserveConditions(next, cur, csr.Denied)
		if string(next.Status.GetCertificate()) != string(cur.GetStatus().GetCertificate()) {
			return c.authorizeSigner(ctx, cur, "sign")
		}
		return nil
	}, validation.CertificateSigningRequestStatusUpdate)
}

// UpdateApproval implements certificatesv1.CertificateSigningRequestsServer.
func (c *csrsServer) UpdateApproval(ctx context.Context, req *csrType) (*csrType, error) {
	return c.updateConditions(ctx, req, "approval", func(next, cur *csrType) error {
		if next.Status == nil {
			next.Status = &certificatesv1.CertificateSigningRequestStatus{}
		}
		next.Status.Conditions = nil
		for _, cond := range req.GetStatus().GetConditions() {
			next.Status.Conditions = append(next.Status.Conditions, proto.Clone(cond).(*certificatesv1.CertificateSigningRequestCondition))
		}
		return c.authorizeSigner(ctx, cur, "approve")
	}, validation.CertificateSigningRequestApprovalUpdate)
}

// updateConditions writes what change makes of the stored object's clone,
// with condition timestamps filled, if rules allow it. metadata.uid and
// metadata.resourceVersion, when set, are preconditions.
func (c *csrsServer) updateConditions(ctx context.Context, req *csrType, sub string, change func(next, cur *csrType) error,
	rules func(next, cur *csrType) field.ErrorList) (*csrType, error) {
	meta := req.GetMetadata()
	if meta.GetName() == "" {
		return nil, apierrors.NewBadRequest("name is required")
	}
	pre := &metav1.Preconditions{Uid: meta.GetUid(), ResourceVersion: meta.GetResourceVersion()}
	return c.reg.GuaranteedUpdate(ctx, registry.Subresource{Name: sub, Operation: admission.Update}, "", meta.GetName(), pre, func(cur *csrType) (*csrType, error) {
		next := proto.Clone(cur).(*csrType)
		if err := change(next, cur); err != nil {
			return nil, err
		}
		conditionTimes(next, cur, c.now())
		if proto.Equal(next, cur) {
			return cur, nil
		}
		if errs := rules(next, cur); len(errs) > 0 {
			return nil, apierrors.NewInvalid("CertificateSigningRequest", meta.GetName(), errs)
		}
		return next, nil
	})
}

// authorizeSigner asks whether the user may verb the CSR's signer: by its
// name, else by its domain's wildcard (Kubernetes'
// IsAuthorizedForSignerName).
func (c *csrsServer) authorizeSigner(ctx context.Context, cur *csrType, verb string) error {
	signer := cur.GetSpec().GetSignerName()
	u := user.From(ctx)
	ri := &server.RequestInfo{User: u, Verb: verb, APIGroup: "certificates.k8s.io", Resource: "signers", Name: signer}
	if c.authorize(ctx, ri) == nil {
		return nil
	}
	domain, _, _ := strings.Cut(signer, "/")
	ri.Name = domain + "/*"
	if c.authorize(ctx, ri) == nil {
		return nil
	}
	name := cur.GetMetadata().GetName()
	return apierrors.NewForbidden("certificatesigningrequests.certificates.k8s.io", name,
		fmt.Sprintf("certificatesigningrequests.certificates.k8s.io %q is forbidden: user not permitted to %s requests with signerName %q", name, verb, signer))
}

// preserveConditions keeps cur's conditions of type t in next when next
// has as many (Kubernetes' preserveConditionInstances: the status
// subresource does not change approval); a different count is left for
// validation to refuse.
func preserveConditions(next, cur *csrType, t string) {
	var ni, ci []int
	for i, cond := range next.GetStatus().GetConditions() {
		if cond.GetType() == t {
			ni = append(ni, i)
		}
	}
	for i, cond := range cur.GetStatus().GetConditions() {
		if cond.GetType() == t {
			ci = append(ci, i)
		}
	}
	if len(ni) != len(ci) {
		return
	}
	for i := range ni {
		next.Status.Conditions[ni[i]] = proto.Clone(cur.Status.Conditions[ci[i]]).(*certificatesv1.CertificateSigningRequestCondition)
	}
}

// conditionTimes fills the conditions' missing timestamps: lastUpdateTime
// now, lastTransitionTime that of cur's condition of the same type and
// status, else now (Kubernetes' populateConditionTimestamps).
func conditionTimes(next, cur *csrType, now time.Time) {
	ts := timestamppb.New(now.Truncate(time.Second))
	for _, cond := range next.GetStatus().GetConditions() {
		if cond.LastUpdateTime == nil {
			cond.LastUpdateTime = proto.Clone(ts).(*timestamppb.Timestamp)
		}
		if cond.LastTransitionTime != nil {
			continue
		}
		cond.LastTransitionTime = proto.Clone(ts).(*timestamppb.Timestamp)
		for _, old := range cur.GetStatus().GetConditions() {
			if old.GetType() == cond.GetType() && old.GetStatus() == cond.GetStatus() && old.LastTransitionTime != nil {
				cond.LastTransitionTime = proto.Clone(old.LastTransitionTime).(*timestamppb.Timestamp)
				break
			}
		}
	}
}
