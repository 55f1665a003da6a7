package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestLinuxResources(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		req, lim              map[string]string
		shares, quota, period int64
		memory                int64
	}{
		{"nothing: minimum shares", nil, nil, 2, 0, 0, 0},
		{"request only", map[string]string{"cpu": "100m"}, nil, 102, 0, 0, 0},
		{"limit only: shares from the limit", nil, map[string]string{"cpu": "2", "memory": "1Gi"}, 2048, 200000, 100000, 1 << 30},
		{"both", map[string]string{"cpu": "250m"}, map[string]string{"cpu": "500m", "memory": "100M"}, 256, 50000, 100000, 100_000_000},
		{"tiny limit: minimum quota", nil, map[string]string{"cpu": "1m"}, 2, 1000, 100000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := linuxResources(&corev1.ResourceRequirements{Requests: tc.req, Limits: tc.lim})
			if err != nil {
				t.Fatal(err)
			}
			if r.GetCpuShares() != tc.shares || r.GetCpuQuota() != tc.quota || r.GetCpuPeriod() != tc.period || r.GetMemoryLimitInBytes() != tc.memory {
				t.Errorf("got %v", r)
			}
		})
	}
	if _, err := linuxResources(&corev1.ResourceRequirements{Limits: map[string]string{"cpu": "lots"}}); err == nil {
		t.Error("a bad quantity passed")
	}
}

func TestSandboxAndContainerConfig(t *testing.T) {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "u1", Labels: map[string]string{"app": "web"}},
		Spec: &corev1.PodSpec{HostNetwork: true, Containers: []*corev1.Container{{
			Name: "app", Image: "demo:v1", Ports: []*corev1.ContainerPort{{ContainerPort: 53, Protocol: "UDP"}},
		}}},
	}
	sb := sandboxConfig(p, 2, "/var/log/pods", "/skiff")
	if sb.GetMetadata().GetAttempt() != 2 || sb.GetLogDirectory() != "/var/log/pods/ns_web_u1" || sb.GetLabels()["app"] != "web" ||
		sb.GetLabels()[labelPodUID] != "u1" || sb.GetLinux().GetCgroupParent() != "/skiff/podu1" || sb.GetHostname() != "" ||
		sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("sandbox config %v", sb)
	}
	if pm := sb.GetPortMappings(); len(pm) != 1 || pm[0].GetProtocol() != runtimeapi.Protocol_UDP {
		t.Errorf("port mappings %v", pm)
	}
	cfg, err := containerConfig(p, p.Spec.Containers[0], containerParams{ImageRef: "sha256:1", RestartCount: 3, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMetadata().GetAttempt() != 3 || cfg.GetLogPath() != "app/3.log" || cfg.GetImage().GetImage() != "sha256:1" ||
		cfg.GetAnnotations()[annotationRestartCount] != "3" || cfg.GetAnnotations()[annotationContainerHash] != containerHash(p.Spec.Containers[0]) ||
		cfg.GetAnnotations()[annotationGracePeriod] != "30" || cfg.GetLabels()[labelContainerName] != "app" {
		t.Errorf("container config %v", cfg)
	}
	// The hash follows the spec.
	changed := &corev1.Container{Name: "app", Image: "demo:v2"}
	if containerHash(changed) == containerHash(p.Spec.Containers[0]) {
		t.Error("hash ignores the image")
	}
}

func TestContainerEnv(t *testing.T) {
	cms := map[string]*corev1.ConfigMap{
		"cfg": {Data: map[string]string{"a": "1", "b": "2", "bad name": "x"}},
	}
	get := func(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
		if cm, ok := cms[name]; ok {
			return cm, nil
		}
		return nil, apierrors.NewNotFound("configmaps", name)
	}
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "u", Labels: map[string]string{"tier": "front"}, Annotations: map[string]string{"example.com/owner": "team-a"}},
		Spec:     &corev1.PodSpec{NodeName: "n1"},
	}
	opt := true
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	c := &corev1.Container{
		Name:      "app",
		Resources: &corev1.ResourceRequirements{Limits: map[string]string{"memory": "64Mi"}},
		EnvFrom:   []*corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{Name: "cfg"}}, {ConfigMapRef: &corev1.ConfigMapEnvSource{Name: "none", Optional: &opt}}},
		Env: []*corev1.EnvVar{
			{Name: "a", Value: "overridden $(b) $$(b) $(nope)"},
			{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: "cfg", Key: "b"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: "cfg", Key: "zz", Optional: &opt}}},
			{Name: "NAME", ValueFrom: field("metadata.name")},
			{Name: "TIER", ValueFrom: field("metadata.labels['tier']")},
			{Name: "OWNER", ValueFrom: field("metadata.annotations['example.com/owner']")},
			{Name: "IP", ValueFrom: field("status.podIP")},
			{Name: "HOST", ValueFrom: field("status.hostIP")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: "1Mi"}}},
			{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		},
	}
	env, err := containerEnv(context.Background(), p, c, envContext{PodIP: "10.0.0.5", HostIP: "192.168.0.1", Allocatable: map[string]string{"cpu": "4"}}, sources{configMap: get})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range env {
		got = append(got, kv.GetKey()+"="+string(kv.GetValue()))
	}
	want := []string{"a=overridden 2 $(b) $(nope)", "b=2", "K=2", "NAME=web", "TIER=front", "OWNER=team-a", "IP=10.0.0.5", "HOST=192.168.0.1", "NODE=n1", "MEM=64", "CPU=4"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("env\n%v\nwant\n%v", got, want)
	}

	for _, tc := range []struct {
		env  *corev1.EnvVar
		want string
	}{
		{&corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: "none", Key: "a"}}}, `configmap "none" not found`},
		{&corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: "cfg", Key: "zz"}}}, "couldn't find key zz in ConfigMap ns/cfg"},
		{&corev1.EnvVar{Name: "X", ValueFrom: field("spec.nope")}, `unsupported fieldPath "spec.nope"`},
	} {
		_, err := containerEnv(context.Background(), p, &corev1.Container{Env: []*corev1.EnvVar{tc.env}}, envContext{}, sources{configMap: get})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.env, err, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	for in, want := range map[string]string{
		"plain": "plain", "$(A)": "x", "$(A)-$(B)": "x-y", "$$(A)": "$(A)", "$(C)": "$(C)", "$(A": "$(A", "$": "$", "a$b": "a$b", "$()": "$()",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVolumes(t *testing.T) {
	root := t.TempDir()
	host := filepath.Join(t.TempDir(), "h")
	cms := map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}}
	get := func(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
		if cm, ok := cms[name]; ok {
			return cm, nil
		}
		return nil, apierrors.NewNotFound("configmaps", name)
	}
	mode := int32(0o600)
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p", Namespace: "ns", Uid: "u"}, Spec: &corev1.PodSpec{Volumes: []*corev1.Volume{
		{Name: "e", EmptyDir: &corev1.EmptyDirVolumeSource{}},
		{Name: "all", ConfigMap: &corev1.ConfigMapVolumeSource{Name: "cfg"}},
		{Name: "some", ConfigMap: &corev1.ConfigMapVolumeSource{Name: "cfg", Items: []*corev1.KeyToPath{{Key: "b", Path: "d/b.txt", Mode: &mode}}}},
		{Name: "h", HostPath: &corev1.HostPathVolumeSource{Path: host, Type: "DirectoryOrCreate"}},
	}}}
	paths, err := prepareVolumes(context.Background(), volumeEnv{root: root, get: sources{configMap: get}}, p)
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	}
	if read(filepath.Join(paths["all"], "a")) != "1" || read(filepath.Join(paths["all"], "bin")) != "\x00\x01" {
		t.Errorf("configMap volume files")
	}
	if fi, err := os.Stat(filepath.Join(paths["some"], "d/b.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("item file: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(paths["some"], "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key not listed in items was written")
	}
	if fi, err := os.Stat(paths["e"]); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir %v %v", fi, err)
	}
	// A key removed from the ConfigMap goes from the volume.
	cms["cfg"] = &corev1.ConfigMap{Data: map[string]string{"a": "10"}}
	if _, err := prepareVolumes(context.Background(), volumeEnv{root: root, get: sources{configMap: get}}, p); err == nil {
		t.Error("a missing item key passed")
	}
	p.Spec.Volumes = p.Spec.Volumes[:2]
	if _, err := prepareVolumes(context.Background(), volumeEnv{root: root, get: sources{configMap: get}}, p); err != nil {
		t.Fatal(err)
	}
	if read(filepath.Join(paths["all"], "a")) != "10" {
		t.Errorf("updated key not rewritten")
	}
	if _, err := os.Stat(filepath.Join(paths["all"], "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed key still there")
	}
	// Mounts.
	c := &corev1.Container{VolumeMounts: []*corev1.VolumeMount{{Name: "e", MountPath: "/e", SubPath: "sub"}, {Name: "all", MountPath: "/c"}}}
	ms, err := containerMounts(p, c, paths)
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].GetHostPath() != filepath.Join(paths["e"], "sub") || ms[0].GetReadonly() || !ms[1].GetReadonly() {
		t.Errorf("mounts %v", ms)
	}
	if _, err := containerMounts(p, &corev1.Container{VolumeMounts: []*corev1.VolumeMount{{Name: "x", MountPath: "/x"}}}, paths); err == nil {
		t.Error("a mount of no volume passed")
	}
	if _, err := containerMounts(p, &corev1.Container{VolumeMounts: []*corev1.VolumeMount{{Name: "e", MountPath: "/x", SubPath: "../up"}}}, paths); err == nil {
		t.Error("a subPath leaving its volume passed")
	}
	// Missing ConfigMap, hostPath types.
	p.Spec.Volumes = []*corev1.Volume{{Name: "m", ConfigMap: &corev1.ConfigMapVolumeSource{Name: "missing"}}}
	if _, err := prepareVolumes(context.Background(), volumeEnv{root: root, get: sources{configMap: get}}, p); err == nil || !strings.Contains(err.Error(), `configmap "missing" not found`) {
		t.Errorf("missing configMap: %v", err)
	}
	p.Spec.Volumes = []*corev1.Volume{{Name: "f", HostPath: &corev1.HostPathVolumeSource{Path: host, Type: "File"}}}
	if _, err := prepareVolumes(context.Background(), volumeEnv{root: root, get: sources{configMap: get}}, p); err == nil || !strings.Contains(err.Error(), "is not a file") {
		t.Errorf("hostPath File on a directory: %v", err)
	}
}

func TestProbeCounter(t *testing.T) {
	for _, tc := range []struct {
		name             string
		success, failure int32
		outcomes         string // s/f
		want             []probeResult
	}{
		{"defaults 1/3", 1, 3, "sfffs", []probeResult{resultSuccess, resultSuccess, resultSuccess, resultFailure, resultSuccess}},
		{"success threshold 2", 2, 1, "ssfs", []probeResult{resultUnknown, resultSuccess, resultFailure, resultFailure}},
		{"zero thresholds mean 1", 0, 0, "fs", []probeResult{resultFailure, resultSuccess}},
	} {
		var c probeCounter
		for i, o := range tc.outcomes {
			c.observe(o == 's', tc.success, tc.failure)
			if c.result != tc.want[i] {
				t.Errorf("%s: after %q result %v, want %v", tc.name, tc.outcomes[:i+1], c.result, tc.want[i])
			}
		}
	}
}

func TestProbeURLAndPorts(t *testing.T) {
	c := &corev1.Container{Name: "app", Ports: []*corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	intPort := func(p int32) *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: p}}
	}
	strPort := func(p string) *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: p}}
	}
	for _, tc := range []struct {
		h    *corev1.HTTPGetAction
		want string
	}{
		{&corev1.HTTPGetAction{Path: "/healthz", Port: intPort(80)}, "http://10.0.0.1:80/healthz"},
		{&corev1.HTTPGetAction{Path: "ready?x=1", Port: strPort("http"), Scheme: "HTTPS"}, "https://10.0.0.1:8080/ready?x=1"},
		{&corev1.HTTPGetAction{Port: strPort("9090"), Host: "localhost"}, "http://localhost:9090/"},
	} {
		got, err := probeURL(tc.h, c, "10.0.0.1")
		if err != nil || got != tc.want {
			t.Errorf("probeURL(%v) = %q, %v; want %q", tc.h, got, err, tc.want)
		}
	}
	if _, err := resolvePort(strPort("grpc"), c); err == nil || !strings.Contains(err.Error(), `couldn't find port "grpc"`) {
		t.Errorf("unknown named port: %v", err)
	}
	if _, err := resolvePort(intPort(70000), c); err == nil {
		t.Error("port 70000 passed")
	}
}

func TestHTTPAndTCPProbes(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("X-Probe") != "yes" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	// The pod's IP 10.1.2.3 is the test server.
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, p, _ := net.SplitHostPort(addr)
		if host == "10.1.2.3" && p == port {
			addr = srv.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	r := newProbeRunner(nil, dial)
	pr := &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/healthz", Port: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: port}},
		HttpHeaders: []*corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}, TimeoutSeconds: 1}
	ctx := context.Background()
	if ok, msg := r.run(ctx, pr, &corev1.Container{}, "", "10.1.2.3"); !ok {
		t.Errorf("http probe failed: %s", msg)
	}
	status = http.StatusInternalServerError
	if ok, msg := r.run(ctx, pr, &corev1.Container{}, "", "10.1.2.3"); ok || msg != "HTTP probe failed with statuscode: 500" {
		t.Errorf("http probe of a 500: %v %q", ok, msg)
	}
	tcp := &corev1.Probe{TcpSocket: &corev1.TCPSocketAction{Port: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: port}}}}
	if ok, msg := r.run(ctx, tcp, &corev1.Container{}, "", "10.1.2.3"); !ok {
		t.Errorf("tcp probe failed: %s", msg)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	_, cport, _ := net.SplitHostPort(closed)
	tcp.TcpSocket = &corev1.TCPSocketAction{Host: "127.0.0.1", Port: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: cport}}}
	if ok, msg := r.run(ctx, tcp, &corev1.Container{}, "", "10.1.2.3"); ok || !strings.Contains(msg, "connection refused") {
		t.Errorf("tcp probe of a closed port: %v %q", ok, msg)
	}
}

func TestParseCRILog(t *testing.T) {
	ts := "2026-01-02T03:04:05.123456789Z"
	for _, tc := range []struct {
		line    string
		stream  string
		partial bool
		content string
		bad     bool
	}{
		{ts + " stdout F hello world", "stdout", false, "hello world", false},
		{ts + " stderr P part", "stderr", true, "part", false},
		{ts + " stdout F", "stdout", false, "", false},
		{ts + " stdout F:x spaced  text ", "stdout", false, "spaced  text ", false},
		{ts + " stdin F x", "", false, "", true},
		{"yesterday stdout F x", "", false, "", true},
		{ts + " stdout Q x", "", false, "", true},
	} {
		r, err := parseCRILog([]byte(tc.line))
		if tc.bad {
			if err == nil {
				t.Errorf("%q parsed", tc.line)
			}
			continue
		}
		if err != nil || r.stream != tc.stream || r.partial != tc.partial || string(r.content) != tc.content || r.ts.Nanosecond() != 123456789 {
			t.Errorf("%q: %+v %v", tc.line, r, err)
		}
	}
}

func TestLogLines(t *testing.T) {
	data := "2026-01-01T00:00:01Z stdout F one\n" +
		"2026-01-01T00:00:02Z stdout P tw\n" +
		"2026-01-01T00:00:03Z stdout F o\n" +
		"garbage\n" +
		"2026-01-01T00:00:04Z stderr F three\n"
	var asm lineAssembler
	lines := parseLines([]byte(data), &asm)
	var texts []string
	for _, l := range lines {
		texts = append(texts, strings.TrimSuffix(string(l.text), "\n"))
	}
	if strings.Join(texts, ",") != "one,two,three" || !lines[1].ts.Equal(time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC)) {
		t.Fatalf("lines %v", texts)
	}
	if got := tail(lines, 2); len(got) != 2 || string(got[0].text) != "two\n" {
		t.Errorf("tail 2: %v", got)
	}
	if got := tail(lines, 0); len(got) != 0 {
		t.Errorf("tail 0: %v", got)
	}
	f := logFilter{since: time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC), timestamps: true}
	var out []byte
	for _, l := range lines {
		if f.keep(l) {
			out = f.format(out, l)
		}
	}
	if string(out) != "2026-01-01T00:00:02Z two\n2026-01-01T00:00:04Z three\n" {
		t.Errorf("since + timestamps: %q", out)
	}
}

func TestNodeReadyCondition(t *testing.T) {
	cond := func(typ string, ok bool, reason, msg string) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: typ, Status: ok, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name   string
		st     *runtimeapi.RuntimeStatus
		err    error
		status string
		msg    string
	}{
		{"ready", &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{cond("RuntimeReady", true, "", ""), cond("NetworkReady", true, "", "")}},
			nil, "True", "kubelet is posting ready status"},
		{"network down", &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{cond("RuntimeReady", true, "", ""), cond("NetworkReady", false, "NetworkPluginNotReady", "no cni")}},
			nil, "False", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:no cni"},
		{"runtime down", &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{cond("RuntimeReady", false, "Boom", "x"), cond("NetworkReady", true, "", "")}},
			nil, "False", "container runtime not ready: RuntimeReady=false reason:Boom message:x"},
		{"unreachable", nil, errors.New("connection refused"), "False", "container runtime is down: connection refused"},
		{"silent", &runtimeapi.RuntimeStatus{}, nil, "False", "container runtime not ready: RuntimeReady condition not reported; container runtime network not ready: NetworkReady condition not reported"},
	} {
		c := readyCondition(tc.st, tc.err)
		if c.GetStatus() != tc.status || c.GetMessage() != tc.msg {
			t.Errorf("%s: %v", tc.name, c)
		}
	}
	ready := readyCondition(&runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{cond("RuntimeReady", true, "", ""), cond("NetworkReady", true, "", "")}}, nil)
	first := nodeConditions(nil, ready, t0)
	later := nodeConditions(first, ready, t0.Add(time.Minute))
	if conditionsChanged(first, later) || !later[3].GetLastTransitionTime().AsTime().Equal(t0) || !later[3].GetLastHeartbeatTime().AsTime().Equal(t0.Add(time.Minute)) {
		t.Errorf("an unchanged condition: %v", later[3])
	}
	down := nodeConditions(later, readyCondition(nil, errors.New("x")), t0.Add(2*time.Minute))
	if !conditionsChanged(later, down) || !down[3].GetLastTransitionTime().AsTime().Equal(t0.Add(2*time.Minute)) {
		t.Errorf("a changed condition: %v", down[3])
	}
}

func TestMachineInfo(t *testing.T) {
	if got := memTotal([]byte("MemTotal:       24682416 kB\nMemFree: 1 kB\n")); got != "24682416Ki" {
		t.Errorf("memTotal = %q", got)
	}
	if got := osImage([]byte("NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("osImage = %q", got)
	}
	m := machine{cpus: 4, memory: "1000Ki"}
	if c := m.capacity(110, map[string]string{"cpu": "2"}); c["cpu"] != "2" || c["memory"] != "1000Ki" || c["pods"] != "110" {
		t.Errorf("capacity %v", c)
	}
}

func TestOOMScoreAdj(t *testing.T) {
	pod := func(req, lim map[string]string) (*corev1.Pod, *corev1.Container) {
		c := &corev1.Container{Name: "c", Resources: &corev1.ResourceRequirements{Requests: req, Limits: lim}}
		return &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{c}}}, c
	}
	for _, tc := range []struct {
		req, lim map[string]string
		want     int64
	}{
		{nil, nil, 1000},
		{map[string]string{"cpu": "1", "memory": "1Gi"}, map[string]string{"cpu": "1", "memory": "1Gi"}, -997},
		{map[string]string{"memory": "1Gi"}, nil, 750},
		{map[string]string{"memory": "4Gi"}, nil, 2},
		{map[string]string{"cpu": "1"}, nil, 999},
	} {
		p, c := pod(tc.req, tc.lim)
		if got := oomScoreAdj(p, c, 4<<30); got != tc.want {
			t.Errorf("requests %v limits %v: %d, want %d", tc.req, tc.lim, got, tc.want)
		}
	}
}

// TestLogEndsWithAPartialLine: output that does not end with a newline
// (the runtime's last record is partial, P) is still shown, without a
// newline, as the kubelet's log reader writes partial records as they are.
func TestLogEndsWithAPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	data := "2026-01-01T00:00:01Z stdout F one\n" +
		"2026-01-01T00:00:02Z stdout P tw\n" +
		"2026-01-01T00:00:03Z stdout P o\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []byte
	err := (&Agent{}).streamLog(context.Background(), &containerInfo{LogPath: path}, logFilter{}, -1, false, func(b []byte) error {
		got = append(got, b...)
		return nil
	})
	if err != nil || string(got) != "one\ntwo" {
		t.Fatalf("log %q, %v; want %q", got, err, "one\ntwo")
	}
}
