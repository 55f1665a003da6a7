package admission

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
)

// ServiceAccountName is the plugin's flag name.
const ServiceAccountName = "ServiceAccount"

// Kubernetes' names of the service-account token volume and its mount.
const (
	DefaultServiceAccount       = "default"
	ServiceAccountVolumePrefix  = "kube-api-access-"
	ServiceAccountTokenPath     = "/var/run/secrets/kubernetes.io/serviceaccount"
	RootCAConfigMap             = "kube-root-ca.crt"
	TokenVolumeExpirationSecond = 3607 // Kubernetes' WarnOnlyBoundTokenExpirationSeconds
	mirrorPodAnnotation         = "kubernetes.io/config.mirror"
)

// serviceAccount is Kubernetes' ServiceAccount plugin, on pod creation: a
// pod without spec.serviceAccountName runs as "default"; the account must
// exist (`error looking up service account ns/x: serviceaccount "x" not
// found`); unless spec.automountServiceAccountToken (else the account's)
// is false, the projected volume kube-api-access-<5 random> (a bound
// token of the account, the cluster CA from the kube-root-ca.crt
// ConfigMap, the namespace) is mounted read-only at
// /var/run/secrets/kubernetes.io/serviceaccount in every container and
// init container that has no mount there (not by an apiserver that issues
// no tokens: Options.NoTokenVolumes); a pod without imagePullSecrets gets
// the account's. Mirror pods may not name an account.
type serviceAccount struct {
	informer *informer.Informer[*corev1.ServiceAccount]
	client   *client.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	noTokens bool // Options.NoTokenVolumes
}

func newServiceAccount(d *Deps) (any, error) {
	c := client.ServiceAccounts(d.Loopback)
	return &serviceAccount{informer: informer.For(d.Informers, c), client: c, noTokens: d.Options.NoTokenVolumes}, nil
}

func (p *serviceAccount) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || !a.resourceIs("", "pods") {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if pod.Spec == nil {
		pod.Spec = &corev1.PodSpec{}
	}
	if _, mirror := pod.GetMetadata().GetAnnotations()[mirrorPodAnnotation]; mirror {
		if pod.Spec.ServiceAccountName != "" {
			return a.Forbidden("a mirror pod may not reference service accounts")
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	sa, err := p.get(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return a.Forbidden("error looking up service account %s/%s: %v", a.Namespace, pod.Spec.ServiceAccountName, err)
	}
	automount := true
	switch {
	case pod.Spec.AutomountServiceAccountToken != nil:
		automount = *pod.Spec.AutomountServiceAccountToken
	case sa.AutomountServiceAccountToken != nil:
		automount = *sa.AutomountServiceAccountToken
	}
	if automount && !p.noTokens {
		mountToken(pod.Spec)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		for _, s := range sa.GetImagePullSecrets() {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, proto.Clone(s).(*corev1.LocalObjectReference))
		}
	}
	return nil
}

// lookupAttempts and lookupRetry: an account the informer does not have is
// read from the API; "default", which the serviceaccounts controller
// makes with the namespace, is read up to 10 times 100-200 ms apart (as
// Kubernetes does) in case the controller is just making it.
const (
	lookupAttempts = 10
	lookupRetry    = 100 * time.Millisecond
)

func (p *serviceAccount) get(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if err := waitSynced(ctx, ServiceAccountName, p.informer); err != nil {
		return nil, err
	}
	if sa, ok := p.informer.Store().GetByName(ns, name); ok {
		return sa, nil
	}
	attempts := 1
	if name == DefaultServiceAccount {
		attempts = lookupAttempts
	}
	for i := range attempts {
		if i > 0 {
			jitter, _ := rand.Int(rand.Reader, big.NewInt(int64(lookupRetry)))
			t := time.NewTimer(lookupRetry + time.Duration(jitter.Int64()))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			if sa, ok := p.informer.Store().GetByName(ns, name); ok {
				return sa, nil
			}
		}
		sa, err := p.client.Get(ctx, ns, name)
		if err == nil {
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("serviceaccount %q not found", name)
}

// mountToken adds the token volume (unless the pod has one) and its mount
// to every container without a mount at ServiceAccountTokenPath.
func mountToken(spec *corev1.PodSpec) {
	volume := ""
	for _, v := range spec.Volumes {
		if strings.HasPrefix(v.GetName(), ServiceAccountVolumePrefix) {
			volume = v.GetName()
			break
		}
	}
	hasVolume := volume != ""
	if !hasVolume {
		volume = ServiceAccountVolumePrefix + randomString(5)
	}
	needed := false
	for _, cs := range [][]*corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			mounted := false
			for _, m := range c.GetVolumeMounts() {
				if m.GetMountPath() == ServiceAccountTokenPath {
					mounted = true
					break
				}
			}
			if !mounted {
				c.VolumeMounts = append(c.VolumeMounts, &corev1.VolumeMount{Name: volume, ReadOnly: true, MountPath: ServiceAccountTokenPath})
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		spec.Volumes = append(spec.Volumes, &corev1.Volume{Name: volume, Projected: TokenVolumeSource()})
	}
}

// TokenVolumeSource is the projected source of the token volume, as
// Kubernetes': the token (3607 s, renewed by the node agent), ca.crt of
// the kube-root-ca.crt ConfigMap, and the namespace; mode 0644.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: proto.Int32(0o644),
		Sources: []*corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: proto.Int64(TokenVolumeExpirationSecond)}},
			{ConfigMap: &corev1.ConfigMapProjection{Name: RootCAConfigMap, Items: []*corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardApi: &corev1.DownwardAPIProjection{Items: []*corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}

// randomString is n characters of Kubernetes' utilrand alphabet (no
// vowels, no confusable digits).
func randomString(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		k, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[k.Int64()]
	}
	return string(b)
}
