// Package certificates holds skiff-controller-manager's controllers of
// CertificateSigningRequests, as Kubernetes' pkg/controller/certificates:
//
//   - csrapproving (approver.go) approves node agents' client certificate
//     requests (signer kubernetes.io/kube-apiserver-client-kubelet) when a
//     SubjectAccessReview says the requester may create
//     certificatesigningrequests/nodeclient (a bootstrap token's user) or,
//     renewing its own (CN = requester), .../selfnodeclient; and, as
//     Skiff's choice (kubelet-csr-approver's), a node's own serving
//     certificate request (signer kubernetes.io/kubelet-serving) whose
//     subject alternative names are all addresses of its Node;
//   - csrsigning (signer.go) signs approved requests of the
//     kubernetes.io/kube-apiserver-client-kubelet, kubelet-serving and
//     kube-apiserver-client signers with the cluster CA
//     (--cluster-signing-cert-file, --cluster-signing-key-file), or adds
//     a Failed condition when the request is not one the signer issues.
//
// What a request must say is package internal/csr's; who may create,
// approve and sign is the apiserver's (RBAC, the approval subresource's
// check of the approve verb on the signer). Neither controller denies: a
// request they do not approve stays pending for a person (skiffctl
// certificate approve|deny).
package certificates
