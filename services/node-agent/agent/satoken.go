package agent

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// APITokenSource is Config.TokenSource over the apiserver: a token of the
// pod's service account from ServiceAccounts.CreateToken, bound to the pod
// (kind Pod, apiVersion v1, its name and uid), for the audience ("": the
// apiserver's own) and lifetime, as the kubelet asks for the
// serviceAccountToken projections of its pods. The apiserver grants a
// node tokens of the pods bound to it only. The agent's tokenCache keeps
// them per pod, audience and lifetime and asks again at 80% of their life
// or after 24 hours; a pod's are dropped when it goes.
func APITokenSource(api grpc.ClientConnInterface) func(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, time.Time, error) {
	sas := corev1.NewServiceAccountsClient(api)
	return func(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, time.Time, error) {
		meta := pod.GetMetadata()
		sa := pod.GetSpec().GetServiceAccountName()
		if sa == "" {
			sa = "default"
		}
		req := &corev1.TokenRequest{
			Metadata: &metav1.ObjectMeta{Namespace: meta.GetNamespace(), Name: sa},
			Spec: &corev1.TokenRequestSpec{
				BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: meta.GetName(), Uid: meta.GetUid()},
			},
		}
		if audience != "" {
			req.Spec.Audiences = []string{audience}
		}
		if expirationSeconds > 0 {
			req.Spec.ExpirationSeconds = proto.Int64(expirationSeconds)
		}
		tr, err := sas.CreateToken(ctx, req)
		if err != nil {
			// The error is the apiserver's; it never holds a token.
			return "", time.Time{}, fmt.Errorf("requesting a token of serviceaccount %s/%s for pod %s: %w", meta.GetNamespace(), sa, meta.GetName(), err)
		}
		st := tr.GetStatus()
		if st.GetToken() == "" || st.GetExpirationTimestamp() == nil {
			return "", time.Time{}, fmt.Errorf("requesting a token of serviceaccount %s/%s for pod %s: the answer has no token or expiry", meta.GetNamespace(), sa, meta.GetName())
		}
		return st.GetToken(), st.GetExpirationTimestamp().AsTime(), nil
	}
}
