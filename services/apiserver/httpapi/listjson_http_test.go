package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/httpapi"
	"skiff.dev/services/apiserver/user"
)

// richPod is a pod whose JSON has most of what a pod's can: quantities,
// int-or-strings, maps, lists of messages, booleans, times.
func richPod(name string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"app":"web","tier":"front"},"annotations":{"note":"a \"quoted\" <value> & more"}},
"spec":{"containers":[{"name":"web","image":"nginx:1.25","command":["nginx","-g","daemon off;"],
"ports":[{"name":"http","containerPort":80,"protocol":"TCP"},{"containerPort":443}],
"env":[{"name":"A","value":"1"},{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"1","memory":"128Mi"}},
"readinessProbe":{"httpGet":{"path":"/healthz","port":"http"},"periodSeconds":5},
"livenessProbe":{"tcpSocket":{"port":80},"initialDelaySeconds":3},
"volumeMounts":[{"name":"data","mountPath":"/data","readOnly":true}]}],
"volumes":[{"name":"data","emptyDir":{"sizeLimit":"1Gi"}}],
"tolerations":[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}],
"nodeSelector":{"disk":"ssd"},"terminationGracePeriodSeconds":10}}`, name)
}

// A List over HTTP answers, byte for byte, the JSON of the list decoded
// as a whole (what the HTTP API answered before it wrote lists from their
// items' encodings): pods with rich specs, configmaps, an empty list, a
// page with continue (an exact list's has no remainingItemCount: see
// TestListJSONIsTheDecodedListsJSON); again (from the cache); and after
// an object changed.
func TestListJSONOverHTTPIsTheDecodedListsJSON(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ns = "/api/v1/namespaces/default/"
	for i := range 5 {
		wantCode(t, "POST pod", k.do(http.MethodPost, ns+"pods", "application/json", richPod(fmt.Sprintf("web-%d", i))), http.StatusCreated)
		wantCode(t, "POST configmap", k.do(http.MethodPost, ns+"configmaps", "application/json",
			fmt.Sprintf(`{"metadata":{"name":"cm-%d"},"data":{"k":"v%d","json":"{\"a\":[1,2]}"},"binaryData":{"b":"AAEC"}}`, i, i)), http.StatusCreated)
	}
	pods, cms := client.Pods(s.Conn), client.ConfigMaps(s.Conn)
	type lister func(*metav1.ListOptions) (proto.Message, error)
	kinds := map[string]lister{
		"pods":       func(o *metav1.ListOptions) (proto.Message, error) { return pods.List(ctx, o) },
		"configmaps": func(o *metav1.ListOptions) (proto.Message, error) { return cms.List(ctx, o) },
	}

	// check lists resource in namespace over HTTP and through gRPC, at
	// the same resource version.
	check := func(what, namespace, resource string, limit int64) []byte {
		t.Helper()
		base := "/api/v1/namespaces/" + namespace + "/" + resource
		first := k.get(base)
		wantCode(t, what, first, http.StatusOK)
		rv := first.json(t)["metadata"].(map[string]any)["resourceVersion"].(string)
		q := url.Values{"resourceVersion": {rv}, "resourceVersionMatch": {"Exact"}}
		if limit > 0 {
			q.Set("limit", fmt.Sprint(limit))
		}
		a := k.get(base + "?" + q.Encode())
		wantCode(t, what, a, http.StatusOK)
		list, err := kinds[resource](&metav1.ListOptions{Namespace: namespace, ResourceVersion: rv, ResourceVersionMatch: "Exact", Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		m := list.ProtoReflect()
		want := httpapi.EncodeList(list, m.Get(m.Descriptor().Fields().ByName("items")).List().Len())
		if !bytes.Equal(a.body, want) {
			t.Fatalf("%s: LIST answered\n%s\nwant\n%s", what, a.body, want)
		}
		return a.body
	}
	for _, resource := range []string{"pods", "configmaps"} {
		check(resource, "default", resource, 0)
		hits, _ := httpapi.ItemJSONCounts()
		body := check(resource+" again", "default", resource, 0)
		if h, _ := httpapi.ItemJSONCounts(); h-hits < 2*5 { // both lists of check
			t.Errorf("%s: %d items' JSON from the cache, want at least 10", resource, h-hits)
		}
		if !bytes.Contains(body, []byte(`"items":[{`)) {
			t.Fatalf("%s: %s", resource, body)
		}
		page := check(resource+", a page", "default", resource, 2)
		if !bytes.Contains(page, []byte(`"continue":"`)) {
			t.Errorf("%s: a page of 2 without continue: %s", resource, page)
		}
		empty := check(resource+", none", "kube-public", resource, 0)
		if !bytes.HasSuffix(empty, []byte(`,"items":[]}`)) {
			t.Errorf("%s: an empty list: %s", resource, empty)
		}
	}

	// An object that changes is listed as it is now.
	wantCode(t, "PUT configmap", k.do(http.MethodPut, ns+"configmaps/cm-3", "application/json",
		`{"metadata":{"name":"cm-3"},"data":{"k":"changed"}}`), http.StatusOK)
	body := check("configmaps after a change", "default", "configmaps", 0)
	if !bytes.Contains(body, []byte(`"data":{"k":"changed"}`)) {
		t.Fatalf("the changed configmap is not listed as it is now: %s", body)
	}
}
