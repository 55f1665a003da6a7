package serviceaccount_test

import (
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/serviceaccount"
)

const patience = 20 * time.Second

// TestDefaultServiceAccounts: every namespace gets a "default"
// ServiceAccount, made again when deleted; with the ServiceAccount
// admission plugin on, a pod of a new namespace is admitted.
func TestDefaultServiceAccounts(t *testing.T) {
	env := managertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins}
	}))
	sas := client.ServiceAccounts(env.Conn)
	managertest.Watch(env, informer.For(env.Manager.Informers, sas))
	c := serviceaccount.New(env.Manager, serviceaccount.Options{})
	env.StartInformers()
	env.GoErr(c.Run)

	has := func(ns string) func() (bool, string) {
		return func() (bool, string) {
			_, err := sas.Get(env.Ctx, ns, "default")
			return err == nil, managertest.Explain("serviceaccount %s/default: %v", ns, err)
		}
	}
	env.Await(patience, "default in kube-system", has("kube-system"))
	if _, err := client.Namespaces(env.Conn).Create(env.Ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "default in team-a", has("team-a"))
	// The admission plugin finds it: a pod of team-a is created.
	if _, err := client.Pods(env.Conn).Create(env.Ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "team-a", Name: "web"},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sas.Delete(env.Ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "default"}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	env.Await(patience, "default in team-a made again", has("team-a"))
}
