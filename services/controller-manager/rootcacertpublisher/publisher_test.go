package rootcacertpublisher_test

import (
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/rootcacertpublisher"
)

const patience = 20 * time.Second

const ca = "-----BEGIN CERTIFICATE-----\nMIIB...test...\n-----END CERTIFICATE-----\n"

// TestPublisher: kube-root-ca.crt holds the CA in every namespace, made
// again when deleted, put right when changed.
func TestPublisher(t *testing.T) {
	env := managertest.Start(t)
	cms := client.ConfigMaps(env.Conn)
	p, err := rootcacertpublisher.New(env.Manager, rootcacertpublisher.Options{RootCA: []byte(ca)})
	if err != nil {
		t.Fatal(err)
	}
	env.StartInformers()
	env.GoErr(p.Run)

	right := func(ns string) func() (bool, string) {
		return func() (bool, string) {
			cm, err := cms.Get(env.Ctx, ns, rootcacertpublisher.ConfigMapName)
			if err != nil {
				return false, err.Error()
			}
			ok := len(cm.GetData()) == 1 && cm.GetData()["ca.crt"] == ca && cm.GetMetadata().GetAnnotations()[rootcacertpublisher.DescriptionAnnotation] != ""
			return ok, managertest.Explain("%s/kube-root-ca.crt: data %v, annotations %v", ns, cm.GetData(), cm.GetMetadata().GetAnnotations())
		}
	}
	env.Await(patience, "kube-root-ca.crt in default", right("default"))
	if _, err := client.Namespaces(env.Conn).Create(env.Ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "kube-root-ca.crt in team-a", right("team-a"))

	cm, err := cms.Get(env.Ctx, "team-a", rootcacertpublisher.ConfigMapName)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"ca.crt": "forged", "extra": "x"}
	if _, err := cms.Update(env.Ctx, cm); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "kube-root-ca.crt in team-a put right", right("team-a"))

	if _, err := cms.Delete(env.Ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: rootcacertpublisher.ConfigMapName}); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "kube-root-ca.crt in team-a made again", right("team-a"))
}

func TestNoCA(t *testing.T) {
	env := managertest.Start(t)
	if _, err := rootcacertpublisher.New(env.Manager, rootcacertpublisher.Options{}); err == nil {
		t.Fatal("no error without a CA")
	}
}
