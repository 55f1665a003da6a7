package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	kcorev1 "k8s.io/api/core/v1"
	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/user"
)

// severable dials connections it can cut all at once, and refuses to
// dial while paused.
type severable struct {
	mu     sync.Mutex
	conns  []net.Conn
	paused bool
}

func (s *severable) pause(p bool) {
	s.mu.Lock()
	s.paused = p
	s.mu.Unlock()
}

func (s *severable) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if paused {
		return nil, fmt.Errorf("dialing %s: paused by the test", addr)
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
	}
	return c, err
}

func (s *severable) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

func clientGo(t *testing.T, s *apiservertest.Server, protobuf bool, dial func(context.Context, string, string) (net.Conn, error)) *kubernetes.Clientset {
	t.Helper()
	cfg, err := s.Security.Config(apiservertest.AdminUser, user.Masters)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rest.Config{Host: "https://" + s.Addr(), QPS: -1,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData}, Dial: dial}
	if protobuf {
		rc.ContentType = "application/vnd.kubernetes.protobuf"
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestClientGoProtobufBodies: client-go's typed clients sending
// Kubernetes' protobuf (as Helm's release storage does) are read.
func TestClientGoProtobufBodies(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	cs := clientGo(t, s, true, nil)
	ctx := context.Background()
	sec, err := cs.CoreV1().Secrets("default").Create(ctx, &kcorev1.Secret{ObjectMeta: kmetav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}},
		Data: map[string][]byte{"k": []byte("v")}}, kmetav1.CreateOptions{})
	if err != nil {
		t.Fatalf("protobuf create: %v", err)
	}
	if string(sec.Data["k"]) != "v" || sec.Labels["a"] != "b" || sec.UID == "" {
		t.Fatalf("created %+v", sec)
	}
	got, err := client.Secrets(s.Conn).Get(ctx, "default", "s")
	if err != nil || string(got.GetData()["k"]) != "v" {
		t.Fatalf("read over gRPC: %v %v", got, err)
	}
}

// TestClientGoInformer: a shared informer sees every change of 1,000 pods
// (1,000 adds, then 1,000 updates whose labels its store holds), and after
// its connections are cut while the cluster changes and etcd is compacted
// past what it saw, relists to the cluster's state, the differences
// reaching its handlers as an add and 10 deletes: client-go
// v0.37's reflector syncs by watch-list (a watch with sendInitialEvents
// from the last revision it saw, NotOlderThan), which the compaction
// cannot make fail; an older client's watch from that revision gets 410
// Expired and LISTs (TestWatchStreamsJSONEvents checks that answer).
func TestClientGoInformer(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := client.Pods(s.Conn)
	const n = 1000
	create := func(name string) {
		t.Helper()
		if _, err := pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "i"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	sev := &severable{}
	cs := clientGo(t, s, false, sev.dial)
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	var mu sync.Mutex
	adds, updates, deletes := 0, 0, 0
	var changed await.Signal
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mu.Lock(); adds++; mu.Unlock(); changed.Poke() },
		UpdateFunc: func(any, any) { mu.Lock(); updates++; mu.Unlock(); changed.Poke() },
		DeleteFunc: func(any) { mu.Lock(); deletes++; mu.Unlock(); changed.Poke() },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				create(fmt.Sprintf("p-%04d", i))
			}
		}()
	}
	wg.Wait()
	counts := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("%d adds, %d updates, %d deletes, %d in the store", adds, updates, deletes, len(inf.GetStore().List()))
	}
	changed.Until(t, time.Minute, "the informer to see 1,000 adds", ctx.Done(), func() (bool, string) {
		mu.Lock()
		seen := adds
		mu.Unlock()
		return seen == n, counts()
	})
	// Every pod changed once: 1,000 updates, each with the new label.
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				p, err := pods.Get(ctx, "default", fmt.Sprintf("p-%04d", i))
				if err == nil {
					p.Metadata.Labels = map[string]string{"changed": "yes"}
					_, err = pods.Update(ctx, p)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	changed.Until(t, time.Minute, "the informer to see 1,000 updates", ctx.Done(), func() (bool, string) {
		mu.Lock()
		seen := updates
		mu.Unlock()
		return seen == n, counts()
	})
	for _, o := range inf.GetStore().List() {
		if p := o.(*kcorev1.Pod); p.Labels["changed"] != "yes" {
			t.Fatalf("pod %s in the informer's store without its update: labels %v", p.Name, p.Labels)
		}
	}
	// Cut its connections and keep it out while the cluster changes and
	// etcd is compacted past what it saw: its watch resumes from a
	// revision that is gone (410 Expired), and it relists.
	sev.pause(true)
	sev.cut()
	for i := 0; i < 10; i++ {
		if _, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: fmt.Sprintf("p-%04d", i), GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	create("after-cut")
	last, err := pods.Get(ctx, "default", "after-cut")
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(last.GetMetadata().GetResourceVersion(), 10, 64)
	if _, err := s.EtcdClient().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	sev.pause(false)
	changed.Until(t, time.Minute, "the informer to relist to 991 pods, with an add and 10 deletes", ctx.Done(), func() (bool, string) {
		keys := inf.GetStore().ListKeys()
		_, has, _ := inf.GetStore().GetByKey("default/after-cut")
		_, gone, _ := inf.GetStore().GetByKey("default/p-0000")
		// The relist's differences reach the handlers as events too.
		mu.Lock()
		events := adds == n+1 && deletes == 10
		mu.Unlock()
		return len(keys) == n-10+1 && has && !gone && events, counts()
	})
}

// TestClientGoOpenAPIV2Protobuf: client-go's discovery asks /openapi/v2
// in protobuf (kubectl's validation and explain of old) and parses
// gnostic's document: the kinds' definitions and paths are there.
func TestClientGoOpenAPIV2Protobuf(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	doc, err := clientGo(t, s, false, nil).Discovery().OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	var deployment, path bool
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		deployment = deployment || d.GetName() == "io.k8s.api.apps.v1.Deployment"
	}
	for _, p := range doc.GetPaths().GetPath() {
		path = path || p.GetName() == "/apis/apps/v1/namespaces/{namespace}/deployments"
	}
	if doc.GetSwagger() != "2.0" || !deployment || !path {
		t.Errorf("swagger %q, Deployment defined %v, its path %v", doc.GetSwagger(), deployment, path)
	}
}
