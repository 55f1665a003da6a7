package validation_test

import (
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// podSpecCase breaks one rule of a pod spec. Its wanted errors are written
// relative to the spec, so the same case checks a pod ("spec.") and a
// Deployment's template ("spec.template.spec.").
type podSpecCase struct {
	name   string
	mutate func(s *corev1.PodSpec)
	want   []string
}

func podSpecCases() []podSpecCase {
	c0 := func(s *corev1.PodSpec) *corev1.Container { return s.Containers[0] }
	affReq := func(s *corev1.PodSpec) *corev1.NodeSelector {
		return s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	const reqTerm = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
	const prefTerm = "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
	return []podSpecCase{
		// containers
		{"no containers", func(s *corev1.PodSpec) { s.Containers = nil }, []string{"containers: Required value"}},
		{"container name missing", func(s *corev1.PodSpec) { c0(s).Name = "" }, []string{"containers[0].name: Required value"}},
		{"container name not a DNS label", func(s *corev1.PodSpec) { c0(s).Name = "Nginx_1" }, []string{"containers[0].name: Invalid value"}},
		{"duplicate container names", func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, &corev1.Container{Name: "nginx", Image: "busybox", ImagePullPolicy: "IfNotPresent", TerminationMessagePolicy: "File"})
		}, []string{"containers[1].name: Duplicate value"}},
		{"init container named like an app container", func(s *corev1.PodSpec) { s.InitContainers[0].Name = "nginx" }, []string{"initContainers[0].name: Duplicate value"}},
		{"image missing", func(s *corev1.PodSpec) { c0(s).Image = "" }, []string{"containers[0].image: Required value"}},
		{"init image missing", func(s *corev1.PodSpec) { s.InitContainers[0].Image = "" }, []string{"initContainers[0].image: Required value"}},
		{"image with surrounding whitespace", func(s *corev1.PodSpec) { c0(s).Image = "nginx:1.14.2 " }, []string{"containers[0].image: Invalid value"}},
		{"nil container", func(s *corev1.PodSpec) { s.Containers = append(s.Containers, nil) }, []string{"containers[1]: Required value"}},

		// ports
		{"container port out of range", func(s *corev1.PodSpec) { c0(s).Ports[0].ContainerPort = 70000 }, []string{"containers[0].ports[0].containerPort: Invalid value"}},
		{"container port missing", func(s *corev1.PodSpec) { c0(s).Ports[0].ContainerPort = 0 }, []string{"containers[0].ports[0].containerPort: Required value"}},
		{"host port out of range", func(s *corev1.PodSpec) { c0(s).Ports[0].HostPort = -1 }, []string{"containers[0].ports[0].hostPort: Invalid value"}},
		{"duplicate port name", func(s *corev1.PodSpec) { c0(s).Ports[1].Name = "http" }, []string{"containers[0].ports[1].name: Duplicate value"}},
		{"port name not an IANA service name", func(s *corev1.PodSpec) { c0(s).Ports[0].Name = "http_port" }, []string{"containers[0].ports[0].name: Invalid value"}},
		{"port protocol unsupported", func(s *corev1.PodSpec) { c0(s).Ports[0].Protocol = "ICMP" }, []string{"containers[0].ports[0].protocol: Unsupported value"}},
		{"port protocol missing", func(s *corev1.PodSpec) { c0(s).Ports[0].Protocol = "" }, []string{"containers[0].ports[0].protocol: Required value"}},
		{"host IP not an IP", func(s *corev1.PodSpec) { c0(s).Ports[0].HostIp = "localhost" }, []string{"containers[0].ports[0].hostIP: Invalid value"}},
		{"host port claimed twice", func(s *corev1.PodSpec) {
			c0(s).Ports[0].HostPort = 8080
			s.Containers = append(s.Containers, &corev1.Container{Name: "sidecar", Image: "envoy:1.30", ImagePullPolicy: "IfNotPresent", TerminationMessagePolicy: "File",
				Ports: []*corev1.ContainerPort{{ContainerPort: 8081, HostPort: 8080, Protocol: "TCP"}}})
		}, []string{"containers[1].ports[0].hostPort: Duplicate value"}},
		{"host network needs hostPort == containerPort", func(s *corev1.PodSpec) {
			s.HostNetwork = true
			c0(s).Ports[0].HostPort = 8080
			c0(s).Ports[1].HostPort = 9113
		}, []string{"containers[0].ports[0].hostPort: Invalid value"}},

		// env
		{"env name starts with a digit", func(s *corev1.PodSpec) { c0(s).Env[0].Name = "1PORT" }, []string{"containers[0].env[0].name: Invalid value"}},
		{"env name is ..", func(s *corev1.PodSpec) { c0(s).Env[0].Name = ".." }, []string{"containers[0].env[0].name: Invalid value"}},
		{"env name missing", func(s *corev1.PodSpec) { c0(s).Env[0].Name = "" }, []string{"containers[0].env[0].name: Required value"}},
		{"valueFrom without a source", func(s *corev1.PodSpec) { c0(s).Env[1].ValueFrom = &corev1.EnvVarSource{} }, []string{"containers[0].env[1].valueFrom: Invalid value"}},
		{"valueFrom with two sources", func(s *corev1.PodSpec) {
			c0(s).Env[1].ValueFrom.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{Name: "cfg", Key: "k"}
		}, []string{"containers[0].env[1].valueFrom: Invalid value"}},
		{"valueFrom and value", func(s *corev1.PodSpec) { c0(s).Env[1].Value = "x" }, []string{"containers[0].env[1].valueFrom: Invalid value"}},
		{"fieldRef path unsupported", func(s *corev1.PodSpec) { c0(s).Env[1].ValueFrom.FieldRef.FieldPath = "spec.containers" },
			[]string{"containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value"}},
		{"fieldRef subscript on a plain field", func(s *corev1.PodSpec) { c0(s).Env[1].ValueFrom.FieldRef.FieldPath = "metadata.name['x']" },
			[]string{"containers[0].env[1].valueFrom.fieldRef.fieldPath: Invalid value"}},
		{"fieldRef label key invalid", func(s *corev1.PodSpec) { c0(s).Env[2].ValueFrom.FieldRef.FieldPath = "metadata.labels['-app']" },
			[]string{"containers[0].env[2].valueFrom.fieldRef.fieldPath: Invalid value"}},
		{"fieldRef apiVersion unsupported", func(s *corev1.PodSpec) { c0(s).Env[1].ValueFrom.FieldRef.ApiVersion = "v2" },
			[]string{"containers[0].env[1].valueFrom.fieldRef.apiVersion: Unsupported value"}},
		{"resourceFieldRef resource unsupported", func(s *corev1.PodSpec) { c0(s).Env[3].ValueFrom.ResourceFieldRef.Resource = "limits.gpu" },
			[]string{"containers[0].env[3].valueFrom.resourceFieldRef.resource: Unsupported value"}},
		{"resourceFieldRef cpu divisor", func(s *corev1.PodSpec) { c0(s).Env[3].ValueFrom.ResourceFieldRef.Divisor = "1k" },
			[]string{"containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value"}},
		{"resourceFieldRef cpu divisor in another notation", func(s *corev1.PodSpec) { c0(s).Env[3].ValueFrom.ResourceFieldRef.Divisor = "1e-3" }, nil},
		{"resourceFieldRef memory divisor", func(s *corev1.PodSpec) {
			c0(s).Env[3].ValueFrom.ResourceFieldRef = &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: "1.5Mi"}
		}, []string{"containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value"}},
		{"resourceFieldRef memory divisor binary", func(s *corev1.PodSpec) {
			c0(s).Env[3].ValueFrom.ResourceFieldRef = &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: "1024Ki"}
		}, nil},
		{"configMapKeyRef key invalid", func(s *corev1.PodSpec) { c0(s).Env[4].ValueFrom.ConfigMapKeyRef.Key = "log/level" },
			[]string{"containers[0].env[4].valueFrom.configMapKeyRef.key: Invalid value"}},
		{"configMapKeyRef name missing", func(s *corev1.PodSpec) { c0(s).Env[4].ValueFrom.ConfigMapKeyRef.Name = "" },
			[]string{"containers[0].env[4].valueFrom.configMapKeyRef.name: Required value"}},
		{"envFrom without a source", func(s *corev1.PodSpec) { c0(s).EnvFrom[0].ConfigMapRef = nil }, []string{"containers[0].envFrom[0]: Invalid value"}},
		{"envFrom prefix invalid", func(s *corev1.PodSpec) { c0(s).EnvFrom[0].Prefix = "1X" }, []string{"containers[0].envFrom[0].prefix: Invalid value"}},

		// volumes and mounts
		{"volume without a source", func(s *corev1.PodSpec) { s.Volumes[1].EmptyDir = nil }, []string{"volumes[1]: Required value"}},
		{"volume with two sources", func(s *corev1.PodSpec) { s.Volumes[1].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"} }, []string{"volumes[1].hostPath: Forbidden"}},
		{"duplicate volume name", func(s *corev1.PodSpec) { s.Volumes[2].Name = "cache"; c0(s).VolumeMounts = c0(s).VolumeMounts[:2] },
			[]string{"volumes[2].name: Duplicate value"}},
		{"volume name not a DNS label", func(s *corev1.PodSpec) { s.Volumes[0].Name = "Config_Vol"; c0(s).VolumeMounts[0].Name = "Config_Vol" },
			[]string{"volumes[0].name: Invalid value"}},
		{"hostPath path missing", func(s *corev1.PodSpec) { s.Volumes[2].HostPath.Path = "" }, []string{"volumes[2].hostPath.path: Required value"}},
		{"hostPath path with ..", func(s *corev1.PodSpec) { s.Volumes[2].HostPath.Path = "/var/../etc" }, []string{"volumes[2].hostPath.path: Invalid value"}},
		{"hostPath type unsupported", func(s *corev1.PodSpec) { s.Volumes[2].HostPath.Type = "Pipe" }, []string{"volumes[2].hostPath.type: Unsupported value"}},
		{"configMap volume name missing", func(s *corev1.PodSpec) { s.Volumes[0].ConfigMap.Name = "" }, []string{"volumes[0].configMap.name: Required value"}},
		{"configMap defaultMode too big", func(s *corev1.PodSpec) { s.Volumes[0].ConfigMap.DefaultMode = ptr[int32](0o1000) },
			[]string{"volumes[0].configMap.defaultMode: Invalid value"}},
		{"configMap item path absolute", func(s *corev1.PodSpec) { s.Volumes[0].ConfigMap.Items[0].Path = "/etc/x" },
			[]string{"volumes[0].configMap.items[0].path: Invalid value"}},
		{"configMap item path reserved", func(s *corev1.PodSpec) { s.Volumes[0].ConfigMap.Items[0].Path = "..data" },
			[]string{"volumes[0].configMap.items[0].path: Invalid value"}},
		{"configMap item key missing", func(s *corev1.PodSpec) { s.Volumes[0].ConfigMap.Items[0].Key = "" },
			[]string{"volumes[0].configMap.items[0].key: Required value"}},
		{"emptyDir sizeLimit malformed", func(s *corev1.PodSpec) { s.Volumes[1].EmptyDir.SizeLimit = "1Gb" }, []string{"volumes[1].emptyDir.sizeLimit: Invalid value"}},
		{"mount of an undeclared volume", func(s *corev1.PodSpec) { c0(s).VolumeMounts[0].Name = "secrets" }, []string{"containers[0].volumeMounts[0].name: Invalid value"}},
		{"init mount of an undeclared volume", func(s *corev1.PodSpec) { s.InitContainers[0].VolumeMounts[0].Name = "tmp" },
			[]string{"initContainers[0].volumeMounts[0].name: Invalid value"}},
		{"mountPath missing", func(s *corev1.PodSpec) { c0(s).VolumeMounts[0].MountPath = "" }, []string{"containers[0].volumeMounts[0].mountPath: Required value"}},
		{"mountPath relative", func(s *corev1.PodSpec) { c0(s).VolumeMounts[0].MountPath = "etc/nginx" }, []string{"containers[0].volumeMounts[0].mountPath: Invalid value"}},
		{"mountPath used twice", func(s *corev1.PodSpec) { c0(s).VolumeMounts[1].MountPath = "/etc/nginx/conf.d/" },
			[]string{"containers[0].volumeMounts[1].mountPath: Invalid value"}},
		{"subPath escapes the volume", func(s *corev1.PodSpec) { c0(s).VolumeMounts[2].SubPath = "../etc" }, []string{"containers[0].volumeMounts[2].subPath: Invalid value"}},

		// resources
		{"malformed quantity", func(s *corev1.PodSpec) { c0(s).Resources.Limits["cpu"] = "500 m" }, []string{"containers[0].resources.limits[cpu]: Invalid value"}},
		{"negative quantity", func(s *corev1.PodSpec) { c0(s).Resources.Requests["memory"] = "-64Mi" }, []string{"containers[0].resources.requests[memory]: Invalid value"}},
		{"quantity without a number", func(s *corev1.PodSpec) { c0(s).Resources.Requests["cpu"] = "m" }, []string{"containers[0].resources.requests[cpu]: Invalid value"}},
		{"quantity out of range", func(s *corev1.PodSpec) { c0(s).Resources.Limits["memory"] = "1e30" }, []string{"containers[0].resources.limits[memory]: Invalid value"}},
		{"cpu request above limit", func(s *corev1.PodSpec) { c0(s).Resources.Requests["cpu"] = "1" }, []string{"containers[0].resources.requests[cpu]: Invalid value"}},
		{"memory request above limit", func(s *corev1.PodSpec) { c0(s).Resources.Requests["memory"] = "0.5Gi" }, []string{"containers[0].resources.requests[memory]: Invalid value"}},
		{"unknown resource name", func(s *corev1.PodSpec) { c0(s).Resources.Limits["gpu"] = "1" }, []string{"containers[0].resources.limits[gpu]: Invalid value"}},
		{"resource name not qualified", func(s *corev1.PodSpec) { c0(s).Resources.Limits["example.com/a/b"] = "1" },
			[]string{"containers[0].resources.limits[example.com/a/b]: Invalid value"}},
		{"extended resource fractional", func(s *corev1.PodSpec) { c0(s).Resources.Limits["nvidia.com/gpu"] = "0.5" },
			[]string{"containers[0].resources.limits[nvidia.com/gpu]: Invalid value"}},
		{"extended resource request differs from limit", func(s *corev1.PodSpec) {
			c0(s).Resources.Limits["nvidia.com/gpu"] = "2"
			c0(s).Resources.Requests["nvidia.com/gpu"] = "1"
		}, []string{"containers[0].resources.requests[nvidia.com/gpu]: Invalid value"}},
		{"quantities in every notation", func(s *corev1.PodSpec) {
			c0(s).Resources = &corev1.ResourceRequirements{
				Limits:   map[string]string{"cpu": "0.5", "memory": "1e9", "ephemeral-storage": "1.5Gi", "nvidia.com/gpu": "1"},
				Requests: map[string]string{"cpu": ".25", "memory": "128M", "ephemeral-storage": "1536Mi", "nvidia.com/gpu": "1", "hugepages-2Mi": "+4Mi"},
			}
		}, nil},

		// probes
		{"probe without a handler", func(s *corev1.PodSpec) { c0(s).LivenessProbe.HttpGet = nil }, []string{"containers[0].livenessProbe: Required value"}},
		{"probe with two handlers", func(s *corev1.PodSpec) { c0(s).LivenessProbe.TcpSocket = &corev1.TCPSocketAction{Port: intOr(80)} },
			[]string{"containers[0].livenessProbe.tcpSocket: Forbidden"}},
		{"probe period not positive", func(s *corev1.PodSpec) { c0(s).ReadinessProbe.PeriodSeconds = -1 }, []string{"containers[0].readinessProbe.periodSeconds: Invalid value"}},
		{"probe negative initial delay", func(s *corev1.PodSpec) { c0(s).ReadinessProbe.InitialDelaySeconds = -5 },
			[]string{"containers[0].readinessProbe.initialDelaySeconds: Invalid value"}},
		{"liveness successThreshold above 1", func(s *corev1.PodSpec) { c0(s).LivenessProbe.SuccessThreshold = 2 },
			[]string{"containers[0].livenessProbe.successThreshold: Invalid value"}},
		{"readiness successThreshold above 1", func(s *corev1.PodSpec) { c0(s).ReadinessProbe.SuccessThreshold = 3 }, nil},
		{"httpGet port out of range", func(s *corev1.PodSpec) { c0(s).LivenessProbe.HttpGet.Port = intOr(0) },
			[]string{"containers[0].livenessProbe.httpGet.port: Invalid value"}},
		{"httpGet port name invalid", func(s *corev1.PodSpec) { c0(s).LivenessProbe.HttpGet.Port = strOr("web_port") },
			[]string{"containers[0].livenessProbe.httpGet.port: Invalid value"}},
		{"httpGet port missing", func(s *corev1.PodSpec) { c0(s).LivenessProbe.HttpGet.Port = nil },
			[]string{"containers[0].livenessProbe.httpGet.port: Required value"}},
		{"httpGet scheme unsupported", func(s *corev1.PodSpec) { c0(s).LivenessProbe.HttpGet.Scheme = "FTP" },
			[]string{"containers[0].livenessProbe.httpGet.scheme: Unsupported value"}},
		{"httpGet header name invalid", func(s *corev1.PodSpec) { c0(s).LivenessProbe.HttpGet.HttpHeaders[0].Name = "X Probe" },
			[]string{"containers[0].livenessProbe.httpGet.httpHeaders[0].name: Invalid value"}},
		{"exec without a command", func(s *corev1.PodSpec) { c0(s).StartupProbe.Exec.Command = nil }, []string{"containers[0].startupProbe.exec.command: Required value"}},
		{"readiness probe with a grace period", func(s *corev1.PodSpec) { c0(s).ReadinessProbe.TerminationGracePeriodSeconds = ptr[int64](10) },
			[]string{"containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value"}},
		{"init container with a probe", func(s *corev1.PodSpec) { s.InitContainers[0].ReadinessProbe = c0(s).ReadinessProbe },
			[]string{"initContainers[0].readinessProbe: Forbidden"}},

		// policies
		{"restartPolicy missing", func(s *corev1.PodSpec) { s.RestartPolicy = "" }, []string{"restartPolicy: Required value"}},
		{"dnsPolicy unsupported", func(s *corev1.PodSpec) { s.DnsPolicy = "Cluster" }, []string{"dnsPolicy: Unsupported value"}},
		{"dnsPolicy None without dnsConfig", func(s *corev1.PodSpec) { s.DnsPolicy = "None" }, []string{"dnsConfig: Required value"}},
		{"dnsPolicy None without nameservers", func(s *corev1.PodSpec) {
			s.DnsPolicy, s.DnsConfig = "None", &corev1.PodDNSConfig{Searches: []string{"example.com"}}
		}, []string{"dnsConfig.nameservers: Required value"}},
		{"dnsPolicy None", func(s *corev1.PodSpec) {
			s.DnsPolicy, s.DnsConfig = "None", &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"example.com."}, Options: []*corev1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}}}
		}, nil},
		{"dnsConfig bad", func(s *corev1.PodSpec) {
			s.DnsConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "dns.example.com"}, Searches: []string{"Bad_Domain"}, Options: []*corev1.PodDNSConfigOption{{}}}
		}, []string{"dnsConfig.nameservers: Invalid value", "dnsConfig.nameservers[3]: Invalid value", "dnsConfig.searches[0]: Invalid value", "dnsConfig.options[0].name: Required value"}},
		{"imagePullPolicy unsupported", func(s *corev1.PodSpec) { c0(s).ImagePullPolicy = "Sometimes" }, []string{"containers[0].imagePullPolicy: Unsupported value"}},
		{"terminationMessagePolicy unsupported", func(s *corev1.PodSpec) { c0(s).TerminationMessagePolicy = "Stdout" },
			[]string{"containers[0].terminationMessagePolicy: Unsupported value"}},

		// tolerations
		{"toleration Exists with a value", func(s *corev1.PodSpec) { s.Tolerations[0].Value = "x" }, []string{"tolerations[0].value: Invalid value"}},
		{"toleration without key must be Exists", func(s *corev1.PodSpec) { s.Tolerations[1].Key = "" }, []string{"tolerations[1].operator: Invalid value"}},
		{"toleration effect unsupported", func(s *corev1.PodSpec) { s.Tolerations[1].Effect = "NoRun" }, []string{"tolerations[1].effect: Unsupported value"}},
		{"tolerationSeconds needs NoExecute", func(s *corev1.PodSpec) { s.Tolerations[1].TolerationSeconds = ptr[int64](60) }, []string{"tolerations[1].effect: Invalid value"}},
		{"toleration operator unsupported", func(s *corev1.PodSpec) { s.Tolerations[1].Operator = "Matches" }, []string{"tolerations[1].operator: Unsupported value"}},
		{"toleration key invalid", func(s *corev1.PodSpec) { s.Tolerations[1].Key = "dedicated node" }, []string{"tolerations[1].key: Invalid value"}},
		{"toleration value invalid", func(s *corev1.PodSpec) { s.Tolerations[1].Value = "web server" }, []string{"tolerations[1].value: Invalid value"}},
		{"toleration of every taint", func(s *corev1.PodSpec) { s.Tolerations = append(s.Tolerations, &corev1.Toleration{Operator: "Exists"}) }, nil},

		// node affinity
		{"In without values", func(s *corev1.PodSpec) { affReq(s).NodeSelectorTerms[0].MatchExpressions[0].Values = nil },
			[]string{reqTerm + "[0].matchExpressions[0].values: Required value"}},
		{"DoesNotExist with values", func(s *corev1.PodSpec) {
			s.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Values = []string{"x"}
		}, []string{prefTerm + "[0].preference.matchExpressions[0].values: Forbidden"}},
		{"Gt with two values", func(s *corev1.PodSpec) {
			affReq(s).NodeSelectorTerms[0].MatchExpressions[1].Values = []string{"2", "4"}
		},
			[]string{reqTerm + "[0].matchExpressions[1].values: Required value"}},
		{"Gt with a non-integer", func(s *corev1.PodSpec) { affReq(s).NodeSelectorTerms[0].MatchExpressions[1].Values = []string{"two"} },
			[]string{reqTerm + "[0].matchExpressions[1].values[0]: Invalid value"}},
		{"node selector operator unknown", func(s *corev1.PodSpec) { affReq(s).NodeSelectorTerms[0].MatchExpressions[0].Operator = "Contains" },
			[]string{reqTerm + "[0].matchExpressions[0].operator: Invalid value"}},
		{"node selector key invalid", func(s *corev1.PodSpec) { affReq(s).NodeSelectorTerms[0].MatchExpressions[0].Key = "/arch" },
			[]string{reqTerm + "[0].matchExpressions[0].key: Invalid value"}},
		{"required node affinity without terms", func(s *corev1.PodSpec) { affReq(s).NodeSelectorTerms = nil }, []string{reqTerm + ": Required value"}},
		{"preferred weight out of range", func(s *corev1.PodSpec) {
			s.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 0
		},
			[]string{prefTerm + "[0].weight: Invalid value"}},
		{"matchFields on a field other than metadata.name", func(s *corev1.PodSpec) {
			affReq(s).NodeSelectorTerms[0].MatchFields = []*corev1.NodeSelectorRequirement{{Key: "spec.unschedulable", Operator: "In", Values: []string{"false"}}}
		}, []string{reqTerm + "[0].matchFields[0].key: Unsupported value"}},

		// topology spread
		{"maxSkew not positive", func(s *corev1.PodSpec) { s.TopologySpreadConstraints[0].MaxSkew = 0 }, []string{"topologySpreadConstraints[0].maxSkew: Invalid value"}},
		{"topologyKey missing", func(s *corev1.PodSpec) { s.TopologySpreadConstraints[0].TopologyKey = "" }, []string{"topologySpreadConstraints[0].topologyKey: Required value"}},
		{"whenUnsatisfiable unsupported", func(s *corev1.PodSpec) { s.TopologySpreadConstraints[0].WhenUnsatisfiable = "Ignore" },
			[]string{"topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value"}},
		{"duplicate spread constraint", func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = append(s.TopologySpreadConstraints, &corev1.TopologySpreadConstraint{
				MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: "ScheduleAnyway"})
		}, []string{"topologySpreadConstraints[1]: Duplicate value"}},
		{"minDomains with ScheduleAnyway", func(s *corev1.PodSpec) { s.TopologySpreadConstraints[0].MinDomains = ptr[int32](3) },
			[]string{"topologySpreadConstraints[0].minDomains: Invalid value"}},
		{"spread label selector operator unknown", func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints[0].LabelSelector.MatchExpressions = []*metav1.LabelSelectorRequirement{{Key: "app", Operator: "Is"}}
		}, []string{"topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator: Invalid value"}},

		// the rest of the spec
		{"nodeSelector value invalid", func(s *corev1.PodSpec) { s.NodeSelector["kubernetes.io/os"] = "linux!" }, []string{"nodeSelector[kubernetes.io/os]: Invalid value"}},
		{"terminationGracePeriodSeconds negative", func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr[int64](-1) },
			[]string{"terminationGracePeriodSeconds: Invalid value"}},
		{"hostname not a DNS label", func(s *corev1.PodSpec) { s.Hostname = "web.1" }, []string{"hostname: Invalid value"}},
		{"serviceAccountName invalid", func(s *corev1.PodSpec) { s.ServiceAccountName = "Nginx" }, []string{"serviceAccountName: Invalid value"}},
		{"nodeName invalid", func(s *corev1.PodSpec) { s.NodeName = "node_1" }, []string{"nodeName: Invalid value"}},
		{"runAsUser negative", func(s *corev1.PodSpec) { c0(s).SecurityContext.RunAsUser = ptr[int64](-1) },
			[]string{"containers[0].securityContext.runAsUser: Invalid value"}},
		{"privileged without privilege escalation", func(s *corev1.PodSpec) { c0(s).SecurityContext.Privileged = ptr(true) },
			[]string{"containers[0].securityContext: Invalid value"}},
		{"pod fsGroup beyond 2^31-1", func(s *corev1.PodSpec) { s.SecurityContext.FsGroup = ptr[int64](1 << 32) }, []string{"securityContext.fsGroup: Invalid value"}},
		{"imagePullSecret without a name", func(s *corev1.PodSpec) { s.ImagePullSecrets = []*corev1.LocalObjectReference{{}} },
			[]string{"imagePullSecrets[0].name: Required value"}},
	}
}
