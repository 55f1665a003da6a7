package certificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/csr"
	"skiff.dev/internal/informer"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/manager"
)

// ApprovingName is the approver's name in --controllers, as Kubernetes'.
const ApprovingName = "csrapproving"

// Kubernetes' reason and messages of an automatic approval, and Skiff's
// for a node's serving certificate.
const (
	reasonAutoApproved = "AutoApproved"
	msgSelfNodeClient  = "Auto approving self kubelet client certificate after SubjectAccessReview."
	msgNodeClient      = "Auto approving kubelet client certificate after SubjectAccessReview."
	msgSelfClient      = "Auto approving self client certificate after SubjectAccessReview."
	msgNodeServing     = "Auto approving kubelet serving certificate: its subject alternative names are addresses of the requesting node."
)

type csrType = certificatesv1.CertificateSigningRequest

// Approver is the csrapproving controller.
type Approver struct {
	log    *zap.Logger
	csrs   *informer.Informer[*csrType]
	nodes  *informer.Informer[*corev1.Node]
	review Reviewer
	rpc    certificatesv1.CertificateSigningRequestsClient
	queue  *controller.Controller
}

// NewApprover builds the approver on the shared CSR and Node informers;
// review answers its SubjectAccessReviews.
func NewApprover(mc *manager.Context, review Reviewer) *Approver {
	parts := mc.For(ApprovingName)
	a := &Approver{
		log:    parts.Logger,
		csrs:   informer.For(mc.Informers, client.CertificateSigningRequests(mc.Conn)),
		nodes:  informer.For(mc.Informers, client.Nodes(mc.Conn)),
		review: review,
		rpc:    certificatesv1.NewCertificateSigningRequestsClient(mc.Conn),
	}
	a.queue = parts.Runner(ApprovingName, 2, controller.ReconcileFunc(a.Reconcile))
	enqueue := func(c *csrType) {
		if csr.Pending(c) && len(c.GetStatus().GetCertificate()) == 0 {
			a.queue.Enqueue(informer.Key(c))
		}
	}
	a.csrs.AddHandler(informer.Handler[*csrType]{OnAdd: enqueue, OnUpdate: func(_, c *csrType) { enqueue(c) }})
	// A serving request waits for its Node (and its addresses): look at the
	// node's pending requests again when it changes.
	onNode := func(n *corev1.Node) {
		requester := csr.NodeUserPrefix + n.GetMetadata().GetName()
		for _, c := range a.csrs.Store().List() {
			if c.GetSpec().GetSignerName() == csr.KubeletServing && c.GetSpec().GetUsername() == requester {
				enqueue(c)
			}
		}
	}
	a.nodes.AddHandler(informer.Handler[*corev1.Node]{OnAdd: onNode, OnUpdate: func(_, n *corev1.Node) { onNode(n) }})
	return a
}

// Run waits for the informers, then works until ctx ends.
func (a *Approver) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, a.csrs, a.nodes) {
		return nil
	}
	return a.queue.Run(ctx)
}

// recognizer is one kind of request the approver knows, and the
// permission (a subresource of certificatesigningrequests the requester
// must be allowed to create) that approves it.
type recognizer struct {
	recognize  func(c *csrType, req *x509.CertificateRequest) bool
	permission string
	message    string
}

// recognizers are Kubernetes' (sarapprove.go), in its order: a renewal
// is tried as such first.
var recognizers = []recognizer{
	{isSelfNodeClient, "selfnodeclient", msgSelfNodeClient},
	{isNodeClient, "nodeclient", msgNodeClient},
	// Skiff's: a client renewing its own certificate (the
	// controller-manager's and the scheduler's --rotate-certificates).
	{isSelfClient, "selfclient", msgSelfClient},
}

func isSelfClient(c *csrType, req *x509.CertificateRequest) bool {
	spec := c.GetSpec()
	return spec.GetSignerName() == csr.KubeAPIServerClient && csr.ValidateSelfClient(req, spec.GetUsages(), spec.GetUsername(), spec.GetGroups()) == nil
}

func isNodeClient(c *csrType, req *x509.CertificateRequest) bool {
	return c.GetSpec().GetSignerName() == csr.KubeAPIServerClientKubelet && csr.ValidateKubeletClient(req, c.GetSpec().GetUsages()) == nil
}

func isSelfNodeClient(c *csrType, req *x509.CertificateRequest) bool {
	return c.GetSpec().GetUsername() == req.Subject.CommonName && isNodeClient(c, req)
}

// Reconcile approves the CSR key when it is one the approver recognizes
// and its requester may have it; anything else is left pending.
func (a *Approver) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	_, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	c, ok := a.csrs.Store().GetByName("", name)
	if !ok || !csr.Pending(c) || len(c.GetStatus().GetCertificate()) > 0 {
		return controller.Result{}, nil
	}
	req, err := csr.ParseRequest(c.GetSpec().GetRequest())
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("csr %s: %w", name, err))
	}
	if c.GetSpec().GetSignerName() == csr.KubeletServing {
		if why := a.servingRefusal(c, req); why != "" {
			a.log.Debug("serving certificate request left pending", zap.String("csr", name), zap.String("why", why))
			return controller.Result{}, nil
		}
		return controller.Result{}, a.approve(ctx, c, msgNodeServing)
	}
	var tried []string
	for _, r := range recognizers {
		if !r.recognize(c, req) {
			continue
		}
		tried = append(tried, r.permission)
		allowed, err := a.review.Allowed(ctx, Access{
			User: c.GetSpec().GetUsername(), UID: c.GetSpec().GetUid(), Groups: c.GetSpec().GetGroups(),
			Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: r.permission,
		})
		if err != nil {
			return controller.Result{}, err
		}
		if allowed {
			return controller.Result{}, a.approve(ctx, c, r.message)
		}
	}
	if len(tried) > 0 {
		a.log.Info("recognized a request whose requester may not have it: left pending", zap.String("csr", name),
			zap.String("requester", c.GetSpec().GetUsername()), zap.Strings("tried", tried))
	}
	return controller.Result{}, nil
}

// servingRefusal says why c is not a node's own serving certificate
// request the approver grants ("" when it is): the requester is
// system:node:<name> in system:nodes, the subject is its own, the
// request is a kubelet serving one, and every DNS name and IP address
// it names is an address (or the name) of Node <name>.
func (a *Approver) servingRefusal(c *csrType, req *x509.CertificateRequest) string {
	spec := c.GetSpec()
	if !slices.Contains(spec.GetGroups(), csr.NodesGroup) || len(spec.GetUsername()) <= len(csr.NodeUserPrefix) || spec.GetUsername()[:len(csr.NodeUserPrefix)] != csr.NodeUserPrefix {
		return "the requester is not a node"
	}
	if req.Subject.CommonName != spec.GetUsername() {
		return "the subject is not the requesting node"
	}
	if err := csr.ValidateKubeletServing(req, spec.GetUsages()); err != nil {
		return err.Error()
	}
	nodeName := spec.GetUsername()[len(csr.NodeUserPrefix):]
	node, ok := a.nodes.Store().GetByName("", nodeName)
	if !ok {
		return "node " + nodeName + " does not exist (yet)"
	}
	known := map[string]bool{nodeName: true}
	var ips []net.IP
	for _, addr := range node.GetStatus().GetAddresses() {
		known[addr.GetAddress()] = true
		if ip := net.ParseIP(addr.GetAddress()); ip != nil {
			ips = append(ips, ip)
		}
	}
	for _, d := range req.DNSNames {
		if !known[d] {
			return fmt.Sprintf("DNS name %q is no address of node %s", d, nodeName)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Sprintf("IP address %s is no address of node %s", ip, nodeName)
		}
	}
	return ""
}

// approve adds the Approved condition through the approval subresource.
func (a *Approver) approve(ctx context.Context, c *csrType, message string) error {
	next := proto.Clone(c).(*csrType)
	if next.Status == nil {
		next.Status = &certificatesv1.CertificateSigningRequestStatus{}
	}
	next.Status.Conditions = append(next.Status.Conditions, &certificatesv1.CertificateSigningRequestCondition{
		Type: csr.Approved, Status: csr.True, Reason: reasonAutoApproved, Message: message,
	})
	_, err := a.rpc.UpdateApproval(ctx, next)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the informer brings the new one
	}
	if err != nil {
		return fmt.Errorf("approving csr %s: %w", c.GetMetadata().GetName(), err)
	}
	a.log.Info("approved", zap.String("csr", c.GetMetadata().GetName()), zap.String("requester", c.GetSpec().GetUsername()), zap.String("signer", c.GetSpec().GetSignerName()))
	return nil
}
