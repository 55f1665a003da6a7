package kubeclients

import (
	"context"
	"github.com/go-logr/logr"
	"testing"
	"time"

	kcorev1 "k8s.io/api/core/v1"
	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"skiff.dev/internal/await"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/user"
)

// stamper is a controller-runtime reconciler as operators write them: it
// gives every ConfigMap labelled stamp=yes the annotation stamped=<its
// data's key count>, through the manager's cached client.
type stamper struct {
	client.Client
	done *await.Signal
}

func (s *stamper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm kcorev1.ConfigMap
	if err := s.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Labels["stamp"] != "yes" || cm.Annotations["stamped"] == "yes" {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations["stamped"] = "yes"
	err := s.Patch(ctx, &cm, patch)
	s.done.Poke()
	return ctrl.Result{}, err
}

// TestControllerRuntime: a controller-runtime manager and reconciler run
// unchanged against the apiserver: discovery and its REST mapper, the
// cache's informers, a merge patch.
func TestControllerRuntime(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Secure())
	cfg, err := srv.Security.Config(apiservertest.AdminUser, user.Masters)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rest.Config{Host: "https://" + srv.Addr(), TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData}}
	log.SetLogger(logr.Discard()) // quiet tests
	mgr, err := ctrl.NewManager(rc, ctrl.Options{Metrics: server.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	var done await.Signal
	if err := ctrl.NewControllerManagedBy(mgr).For(&kcorev1.ConfigMap{}).Complete(&stamper{Client: mgr.GetClient(), done: &done}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	cs := clientGo(t, rc)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &kcorev1.ConfigMap{ObjectMeta: kmetav1.ObjectMeta{Name: "s", Labels: map[string]string{"stamp": "yes"}}}, kmetav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done.Until(t, time.Minute, "the reconciler to stamp the ConfigMap", ctx.Done(), func() (bool, string) {
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "s", kmetav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Annotations["stamped"] == "yes", "annotations " + cm.Annotations["stamped"]
	})
}

func clientGo(t *testing.T, rc *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
