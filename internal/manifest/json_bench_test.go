package manifest

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/kinds"
	corev1 "skiff.dev/proto/core/v1"
)

// The objects of the benchmarks: a ConfigMap of 1 KiB as issue 22's
// http.create_per_s creates them, and a typical running pod: the
// conformance example, defaulted, with the metadata and status the
// apiserver and the node agent give it.

const benchConfigMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: bench-000123
  namespace: default
  uid: 6b1c3f5e-8d0a-4f2b-9e61-0c2d7a4b9f10
  resourceVersion: "123456"
  creationTimestamp: "2024-05-01T12:00:00Z"
  labels: {app: bench, run: "42"}
`

const benchPodMetaStatusYAML = `metadata:
  name: example-7d9c5b6f4-x2x9k
  namespace: default
  uid: 0d3f6a2e-1b4c-4e8d-9f0a-7c6b5a4d3e2f
  resourceVersion: "987654"
  creationTimestamp: "2024-05-01T12:00:00Z"
  generateName: example-7d9c5b6f4-
  labels: {app: web, pod-template-hash: 7d9c5b6f4}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: example-7d9c5b6f4, uid: 1a2b3c4d-0000-4e8d-9f0a-7c6b5a4d3e2f, controller: true, blockOwnerDeletion: true}
spec:
  nodeName: node-17
status:
  phase: Running
  conditions:
  - {type: PodReadyToStartContainers, status: "True", lastTransitionTime: "2024-05-01T12:00:02Z"}
  - {type: Initialized, status: "True", lastTransitionTime: "2024-05-01T12:00:00Z"}
  - {type: Ready, status: "True", lastTransitionTime: "2024-05-01T12:00:04Z"}
  - {type: ContainersReady, status: "True", lastTransitionTime: "2024-05-01T12:00:04Z"}
  - {type: PodScheduled, status: "True", lastTransitionTime: "2024-05-01T12:00:00Z"}
  hostIP: 192.168.1.17
  podIP: 10.244.17.23
  podIPs: [{ip: 10.244.17.23}]
  startTime: "2024-05-01T12:00:00Z"
  qosClass: Burstable
  containerStatuses:
  - name: web
    state: {running: {startedAt: "2024-05-01T12:00:03Z"}}
    ready: true
    restartCount: 0
    started: true
    image: docker.io/library/nginx:1.25
    imageID: docker.io/library/nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31
    containerID: containerd://5f0c3e2b1a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b
`

func benchConfigMap(b *testing.B) proto.Message {
	cm := &corev1.ConfigMap{}
	if err := Decode(parse(b, benchConfigMapYAML), cm, DecodeOptions{}); err != nil {
		b.Fatal(err)
	}
	cm.Data = map[string]string{"payload": strings.Repeat("0123456789abcdef", 64)}
	return cm
}

func benchPod(b *testing.B) proto.Message {
	src, err := os.ReadFile("../../tests/conformance/testdata/v1.Pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := Decode(parse(b, string(src)), pod, DecodeOptions{}); err != nil {
		b.Fatal(err)
	}
	kinds.MustGet("", "v1", "Pod").Default(pod)
	rest := &corev1.Pod{}
	if err := Decode(parse(b, benchPodMetaStatusYAML), rest, DecodeOptions{}); err != nil {
		b.Fatal(err)
	}
	proto.Merge(pod, rest)
	return pod
}

func benchObjects(b *testing.B) []struct {
	name string
	obj  proto.Message
} {
	return []struct {
		name string
		obj  proto.Message
	}{{"ConfigMap1KiB", benchConfigMap(b)}, {"Pod", benchPod(b)}}
}

// BenchmarkEncodeJSON compares the ways to write an object's JSON:
// AppendJSON (into a reused buffer, as a server writing responses
// does), Encode's tree through encoding/json, and protojson (not
// Kubernetes' shape; for scale).
func BenchmarkEncodeJSON(b *testing.B) {
	for _, o := range benchObjects(b) {
		size := int64(len(AppendJSON(nil, o.obj)))
		b.Run(o.name+"/AppendJSON", func(b *testing.B) {
			b.SetBytes(size)
			var buf []byte
			measure(b, func() { buf = AppendJSON(buf[:0], o.obj) })
		})
		b.Run(o.name+"/Encode+encoding-json", func(b *testing.B) {
			b.SetBytes(size)
			measure(b, func() { CompactJSON(Encode(o.obj)) })
		})
		b.Run(o.name+"/protojson", func(b *testing.B) {
			b.SetBytes(size)
			measure(b, func() {
				if _, err := protojson.Marshal(o.obj); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkDecodeJSON compares the ways to read an object from JSON:
// UnmarshalJSON (Strict), Read's tree and Decode, and protojson (from
// its own JSON).
func BenchmarkDecodeJSON(b *testing.B) {
	for _, o := range benchObjects(b) {
		data := AppendJSON(nil, o.obj)
		b.Run(o.name+"/UnmarshalJSON", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			msg := o.obj.ProtoReflect().New().Interface()
			measure(b, func() {
				if _, err := UnmarshalJSON(data, msg, JSONOptions{FieldValidation: FieldValidationStrict}); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(o.name+"/Read+Decode", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			measure(b, func() {
				docs, err := Read("-", bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if err := Decode(docs[0].Object, o.obj.ProtoReflect().New().Interface(), DecodeOptions{}); err != nil {
					b.Fatal(err)
				}
			})
		})
		pj, err := protojson.Marshal(o.obj)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(o.name+"/protojson", func(b *testing.B) {
			b.SetBytes(int64(len(pj)))
			msg := o.obj.ProtoReflect().New().Interface()
			measure(b, func() {
				if err := protojson.Unmarshal(pj, msg); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkEncodePodList1000 writes a LIST of 1,000 pods (issue 22's
// http.list_1000_p99_ms: 100 ms on two cores).
func BenchmarkEncodePodList1000(b *testing.B) {
	pod := benchPod(b).(*corev1.Pod)
	list := &corev1.PodList{ApiVersion: "v1", Kind: "PodList"}
	for range 1000 {
		list.Items = append(list.Items, pod)
	}
	b.SetBytes(int64(len(AppendJSON(nil, list))))
	var buf []byte
	measure(b, func() { buf = AppendJSON(buf[:0], list) })
}

// measure runs op in the benchmark's loop and reports, beside ns/op, the
// process's CPU time per op (user and system, of every thread, the
// garbage collector's included): on a loaded machine ns/op counts the
// time op waited for a CPU, cpu-ns/op does not.
func measure(b *testing.B, op func()) {
	b.ReportAllocs()
	start, n := cpuTime(b), 0
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(n), "cpu-ns/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
