package controller

import "testing"

func TestKeys(t *testing.T) {
	cases := []struct {
		name           string
		namespace, obj string
		key            string
	}{
		{name: "namespaced", namespace: "default", obj: "web", key: "default/web"},
		{name: "cluster-scoped", namespace: "", obj: "node-1", key: "node-1"},
		{name: "dots and dashes", namespace: "kube-system", obj: "a.b-c", key: "kube-system/a.b-c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := KeyOf(tc.namespace, tc.obj); got != tc.key {
				t.Fatalf("KeyOf(%q, %q) = %q, want %q", tc.namespace, tc.obj, got, tc.key)
			}
			ns, name, err := SplitKey(tc.key)
			if err != nil || ns != tc.namespace || name != tc.obj {
				t.Fatalf("SplitKey(%q) = %q, %q, %v; want %q, %q", tc.key, ns, name, err, tc.namespace, tc.obj)
			}
		})
	}
}

func TestSplitKeyInvalid(t *testing.T) {
	for _, key := range []string{"", "/", "/web", "default/", "a/b/c", "//"} {
		if ns, name, err := SplitKey(key); err == nil {
			t.Errorf("SplitKey(%q) = %q, %q, nil; want an error", key, ns, name)
		}
	}
}
