package crienv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BareNamespace is the pod namespace of the bare loop's sandboxes.
const BareNamespace = "crienv-bare"

// BareSandboxConfig is the sandbox config of the bare loop: what a
// kubelet-like agent sends for a pod with one container port and no host
// port. Its log directory is under env.PodLogDir (containerd creates it).
func BareSandboxConfig(env *Env, name, namespace, uid string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: namespace},
		Hostname:     name,
		LogDirectory: filepath.Join(env.PodLogDir, namespace+"_"+name+"_"+uid),
		PortMappings: []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080}},
		Labels: map[string]string{
			"io.kubernetes.pod.name":      name,
			"io.kubernetes.pod.namespace": namespace,
			"io.kubernetes.pod.uid":       uid,
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD,
					Pid:     runtimeapi.NamespaceMode_CONTAINER,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
}

// BareContainerConfig is the container config of the bare loop: the image
// as is (its entrypoint), a log file, best-effort resources as a kubelet
// sets them (cpu shares 2, oom_score_adj 1000, which containerd raises to
// its own where restrict_oom_score_adj is set).
func BareContainerConfig(sb *runtimeapi.PodSandboxConfig, name, image string) *runtimeapi.ContainerConfig {
	labels := map[string]string{"io.kubernetes.container.name": name}
	for k, v := range sb.GetLabels() {
		labels[k] = v
	}
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		LogPath:  filepath.Join(name, "0.log"),
		Labels:   labels,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: sb.GetLinux().GetSecurityContext().GetNamespaceOptions(),
			},
		},
	}
}

// BarePodStart starts pod i of the bare loop with the CRI calls a node
// agent makes for a one-container pod whose image is present:
// RunPodSandbox, ImageStatus, CreateContainer (demo:v1), StartContainer,
// then ContainerStatus until RUNNING. It returns the time from before
// RunPodSandbox to RUNNING seen, and a cleanup that stops and removes the
// sandbox (nil when err is not).
func BarePodStart(ctx context.Context, env *Env, i int) (time.Duration, func(context.Context) error, error) {
	uid := randomUID()
	name := fmt.Sprintf("bare-%d", i)
	sbCfg := BareSandboxConfig(env, name, BareNamespace, uid)
	image := env.DemoImage("v1")
	rt := env.Runtime

	start := time.Now()
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		return 0, nil, fmt.Errorf("crienv: bare pod %d: RunPodSandbox: %w", i, err)
	}
	id := sb.GetPodSandboxId()
	cleanup := func(ctx context.Context) error { return removeSandbox(ctx, rt, id) }
	fail := func(step string, err error) (time.Duration, func(context.Context) error, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return 0, nil, errors.Join(fmt.Errorf("crienv: bare pod %d: %s: %w", i, step, err), cleanup(cctx))
	}
	st, err := env.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err == nil && st.GetImage() == nil {
		err = fmt.Errorf("image %s not present", image)
	}
	if err != nil {
		return fail("ImageStatus", err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  id,
		Config:        BareContainerConfig(sbCfg, "demo", image),
		SandboxConfig: sbCfg,
	})
	if err != nil {
		return fail("CreateContainer", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
		return fail("StartContainer", err)
	}
	// The CRI has no event stream in containerd 1.6 (GetContainerEvents
	// came later), so RUNNING is polled, every 10 ms: the agent's relist
	// is the comparison, and StartContainer returns once the process runs,
	// so the first poll normally sees it.
	for {
		cs, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetContainerId()})
		if err != nil {
			return fail("ContainerStatus", err)
		}
		switch cs.GetStatus().GetState() {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			return time.Since(start), cleanup, nil
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			return fail("ContainerStatus", fmt.Errorf("container exited (code %d, %s)", cs.GetStatus().GetExitCode(), cs.GetStatus().GetReason()))
		}
		select {
		case <-ctx.Done():
			return fail("waiting for RUNNING", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// BareP50 starts n bare pods at once, as the benchmark creates its pods,
// waits until all run, then removes them. It returns the p50 of the start
// latencies and the latencies by pod index.
func BareP50(ctx context.Context, env *Env, n int) (p50 time.Duration, latencies []time.Duration, err error) {
	latencies = make([]time.Duration, n)
	cleanups := make([]func(context.Context) error, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			latencies[i], cleanups[i], errs[i] = BarePodStart(ctx, env, i)
		}()
	}
	wg.Wait()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	for i, c := range cleanups {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cerr := c(cctx); cerr != nil {
				errs[i] = errors.Join(errs[i], cerr)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, latencies, err
	}
	return Percentile(latencies, 0.5), latencies, nil
}

// Percentile is the nearest-rank percentile p (0 < p <= 1) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

func randomUID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
