package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

type obj = map[string]any
type list = []any

func TestMerge(t *testing.T) {
	cases := []struct {
		name                     string
		original, modified, live obj
		want                     obj
	}{
		{
			name:     "first apply over an existing object keeps what the server set",
			original: nil,
			modified: obj{"spec": obj{"replicas": int64(2)}},
			live:     obj{"spec": obj{"replicas": int64(1), "revisionHistoryLimit": int64(10)}, "status": obj{"replicas": int64(1)}},
			want:     obj{"spec": obj{"replicas": int64(2), "revisionHistoryLimit": int64(10)}, "status": obj{"replicas": int64(1)}},
		},
		{
			name:     "a field removed from the configuration is removed",
			original: obj{"metadata": obj{"labels": obj{"app": "web", "tier": "front"}}},
			modified: obj{"metadata": obj{"labels": obj{"app": "web"}}},
			live:     obj{"metadata": obj{"labels": obj{"app": "web", "tier": "front", "team": "a"}, "uid": "u"}},
			want:     obj{"metadata": obj{"labels": obj{"app": "web", "team": "a"}, "uid": "u"}},
		},
		{
			name:     "a whole object removed from the configuration goes",
			original: obj{"spec": obj{"strategy": obj{"type": "Recreate"}}},
			modified: obj{"spec": obj{}},
			live:     obj{"spec": obj{"strategy": obj{"type": "Recreate"}, "replicas": int64(1)}},
			want:     obj{"spec": obj{"replicas": int64(1)}},
		},
		{
			name:     "a field set by another writer, in neither configuration, stays",
			original: obj{"spec": obj{"replicas": int64(2)}},
			modified: obj{"spec": obj{"replicas": int64(3)}},
			live:     obj{"spec": obj{"replicas": int64(2), "paused": true}},
			want:     obj{"spec": obj{"replicas": int64(3), "paused": true}},
		},
		{
			name:     "lists of scalars are replaced",
			original: obj{"args": list{"a", "b"}},
			modified: obj{"args": list{"c"}},
			live:     obj{"args": list{"a", "b", "x"}},
			want:     obj{"args": list{"c"}},
		},
		{
			name:     "containers merge by name: server defaults kept, dropped ones removed, foreign ones kept",
			original: obj{"containers": list{obj{"name": "web", "image": "nginx:1"}, obj{"name": "old", "image": "o"}}},
			modified: obj{"containers": list{obj{"name": "web", "image": "nginx:2"}, obj{"name": "new", "image": "n"}}},
			live: obj{"containers": list{
				obj{"name": "web", "image": "nginx:1", "imagePullPolicy": "IfNotPresent"},
				obj{"name": "old", "image": "o"},
				obj{"name": "injected", "image": "sidecar"},
			}},
			want: obj{"containers": list{
				obj{"name": "web", "image": "nginx:2", "imagePullPolicy": "IfNotPresent"},
				obj{"name": "new", "image": "n"},
				obj{"name": "injected", "image": "sidecar"},
			}},
		},
		{
			name:     "ports merge by containerPort",
			original: obj{"ports": list{obj{"containerPort": int64(80)}}},
			modified: obj{"ports": list{obj{"containerPort": int64(80), "name": "http"}}},
			live:     obj{"ports": list{obj{"containerPort": int64(80), "protocol": "TCP"}}},
			want:     obj{"ports": list{obj{"containerPort": int64(80), "protocol": "TCP", "name": "http"}}},
		},
		{
			name:     "null in the configuration deletes",
			original: nil,
			modified: obj{"spec": obj{"paused": nil}},
			live:     obj{"spec": obj{"paused": true}},
			want:     obj{"spec": obj{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.original, tc.modified, tc.live)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("merge (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeLeavesItsArgumentsAlone(t *testing.T) {
	live := obj{"spec": obj{"containers": list{obj{"name": "a", "image": "x"}}}}
	mod := obj{"spec": obj{"containers": list{obj{"name": "a", "image": "y"}}}}
	Merge(nil, mod, live)
	if img := live["spec"].(obj)["containers"].(list)[0].(obj)["image"]; img != "x" {
		t.Errorf("live changed: image %v", img)
	}
}

func TestLastApplied(t *testing.T) {
	cfg := obj{"kind": "ConfigMap", "metadata": obj{"name": "c", "annotations": obj{LastAppliedAnnotation: "stale"}}, "data": obj{"a": "<b>"}}
	out, value := WithLastApplied(cfg)
	want := `{"data":{"a":"\u003cb\u003e"},"kind":"ConfigMap","metadata":{"name":"c"}}` + "\n"
	if value != want {
		t.Errorf("annotation %q, want %q", value, want)
	}
	back, err := Original(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(obj{"data": obj{"a": "<b>"}, "kind": "ConfigMap", "metadata": obj{"name": "c"}}, back); diff != "" {
		t.Errorf("Original (-want +got):\n%s", diff)
	}
	if none, err := Original(obj{"metadata": obj{}}); none != nil || err != nil {
		t.Errorf("Original of an object never applied: %v, %v", none, err)
	}
}
