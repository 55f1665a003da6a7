package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/ephemeral"
	"skiff.dev/internal/events"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/cri"
)

// syncResult collects what one sync found: waiting reasons for the
// status, and when to look again.
type syncResult struct {
	waiting map[string]*corev1.ContainerStateWaiting
	requeue time.Duration // 0: not needed
	errs    []error

	// rejectReason and rejectMessage: the pod may not run on this node
	// (admitPod); it is Failed with them.
	rejectReason, rejectMessage string
}

func (r *syncResult) wait(name, reason, message string) {
	r.waiting[name] = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
}

func (r *syncResult) requeueAfter(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if r.requeue == 0 || d < r.requeue {
		r.requeue = d
	}
}

// syncPod makes the runtime match the pod at key (namespace/name) and
// writes the pod's status. It is the agent's Reconciler: level-based, it
// reads the pod from the informer and the runtime afresh each time.
func (a *Agent) syncPod(ctx context.Context, key string) (controller.Result, error) {
	start := time.Now()
	defer func() { a.m.podWorker.Observe(time.Since(start).Seconds()) }()
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	pod, ok := a.pods.Store().GetByName(ns, name)
	all, err := a.obs.observe(ctx, ns, name)
	if err != nil {
		return controller.Result{}, err
	}
	uid := ""
	if ok {
		uid = pod.GetMetadata().GetUid()
	}
	// What belongs to another pod of that name (deleted, maybe replaced)
	// goes.
	if stale := all.others(uid); !stale.empty() {
		if err := a.cleanup(ctx, stale); err != nil {
			return controller.Result{}, err
		}
	}
	if !ok {
		return controller.Result{}, nil
	}
	rt := all.forUID(uid)
	if pod.GetMetadata().GetDeletionTimestamp() != nil {
		return controller.Result{}, a.terminate(ctx, pod, rt)
	}
	return a.syncActive(ctx, pod, rt)
}

// syncActive runs the actions computeActions decides and writes the
// status that results.
func (a *Agent) syncActive(ctx context.Context, pod *corev1.Pod, rt *podRuntime) (controller.Result, error) {
	pod, err := a.evictionSync(ctx, pod, rt) // evicted, or refused under memory pressure
	if err != nil {
		return controller.Result{}, err
	}
	res := &syncResult{waiting: map[string]*corev1.ContainerStateWaiting{}}
	_, startupOK, unhealthy := a.prober.snapshot(rt)
	act := computeActions(pod, rt, unhealthy, startupOK)
	if reason, msg := a.admitPod(pod); reason != "" { // securitycontext.go: the kubelet's admission
		a.recorder.Event(pod, events.EventTypeWarning, reason, msg)
		res.rejectReason, res.rejectMessage = reason, "Pod was rejected: "+msg
	}
	if ph := pod.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" || res.rejectReason != "" {
		act = podActions{Terminal: true, KillPod: anyRunning(rt) || (rt.newestSandbox() != nil && rt.newestSandbox().Ready)}
	}
	changed := false

	if act.KillPod {
		changed = true
		if err := a.killPod(ctx, pod, rt, gracePeriod(pod)); err != nil {
			res.errs = append(res.errs, err)
		}
	}
	for _, k := range act.Kill {
		changed = true
		if err := a.stopContainer(ctx, pod, k.Name, k.ID, gracePeriod(pod), k.Message); err != nil { // hooks.go: preStop, then stop
			res.errs = append(res.errs, err)
		}
	}
	for _, id := range act.Remove {
		changed = true
		if err := a.rt.RemoveContainer(ctx, id); err != nil && !cri.IsNotFound(err) {
			res.errs = append(res.errs, fmt.Errorf("removing container %s: %w", id, err))
			continue
		}
		// Its log goes with it, as the kubelet's container GC does.
		for _, c := range rt.Containers {
			if c.ID == id && c.LogPath != "" {
				if err := os.Remove(c.LogPath); err != nil && !errors.Is(err, os.ErrNotExist) {
					a.log.Info("removing a container's log", zap.String("path", c.LogPath), zap.Error(err))
				}
			}
		}
	}
	if act.Terminal {
		a.prober.removePod(pod.GetMetadata().GetUid())
	}

	if !act.Terminal && len(res.errs) == 0 && (act.CreateSandbox || len(act.InitStart) > 0 || len(act.Start) > 0 || len(act.EphemeralStart) > 0) {
		release, err := a.acquireStart(ctx)
		if err != nil {
			return controller.Result{}, err
		}
		defer release()
	}
	var sb *sandboxRef
	if !act.Terminal && len(res.errs) == 0 {
		switch {
		case act.CreateSandbox:
			changed = true
			s, err := a.createSandbox(ctx, pod, act.Attempt)
			if err != nil {
				res.errs = append(res.errs, err)
			}
			sb = s
		case act.SandboxID != "":
			cur := rt.newestSandbox()
			sb = &sandboxRef{id: cur.ID, ip: cur.IP, cfg: sandboxConfig(pod, cur.Attempt, a.cfg.PodLogDir, a.cfg.CgroupRoot)}
		}
	}
	if sb != nil && (len(act.InitStart) > 0 || len(act.Start) > 0 || len(act.EphemeralStart) > 0) {
		get := a.sources.cached()
		paths, err := prepareVolumes(ctx, a.volumeEnv(get), pod)
		if err != nil {
			a.recorder.Event(pod, events.EventTypeWarning, "FailedMount", err.Error())
			res.errs = append(res.errs, err)
			if errors.Is(err, errClaimPending) {
				// A claim being bound: look again soon, whatever the
				// error backoff has grown to.
				res.requeueAfter(claimPendingRetry)
			}
		} else {
			for _, i := range act.InitStart {
				c := pod.GetSpec().GetInitContainers()[i]
				started, err := a.startContainer(ctx, pod, c, true, sb, rt, paths, get, res)
				changed = changed || started
				if err != nil {
					res.errs = append(res.errs, err)
				}
			}
			for _, i := range act.Start {
				c := pod.GetSpec().GetContainers()[i]
				started, err := a.startContainer(ctx, pod, c, false, sb, rt, paths, get, res)
				changed = changed || started
				if err != nil {
					res.errs = append(res.errs, err)
				}
			}
			for _, i := range act.EphemeralStart { // ephemeral.go
				c := ephemeral.Container(pod.GetSpec().GetEphemeralContainers()[i])
				started, err := a.startContainer(ctx, pod, c, false, sb, rt, paths, get, res)
				changed = changed || started
				if err != nil {
					res.errs = append(res.errs, err)
				}
			}
		}
	}

	if sb != nil && !act.Terminal && len(act.InitStart) == 0 && len(act.Start) == 0 && hasRefreshedVolumes(pod) {
		// Running: the volumes follow their sources (volumesync.go).
		if _, err := prepareVolumes(ctx, a.volumeEnv(a.sources.cached()), pod); err != nil {
			a.recorder.Event(pod, events.EventTypeWarning, "FailedMount", err.Error())
			res.errs = append(res.errs, err)
		}
	}

	if changed {
		all, err := a.obs.observe(ctx, pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName())
		if err != nil {
			return controller.Result{}, errors.Join(append(res.errs, err)...)
		}
		rt = all.forUID(pod.GetMetadata().GetUid())
	}
	podIP := ""
	if s := rt.newestSandbox(); s != nil && s.Ready {
		podIP = a.podIP(pod, s.IP)
	}
	if !act.Terminal {
		a.prober.update(pod, rt, podIP)
	}
	if err := a.writeStatus(ctx, pod, rt, res); err != nil {
		res.errs = append(res.errs, err)
	}
	if res.requeue > 0 {
		a.delay.after(keyOf(pod), res.requeue)
	}
	return controller.Result{}, errors.Join(res.errs...)
}

// podIP is the pod's address: its sandbox's, or the node's on the host
// network.
func (a *Agent) podIP(p *corev1.Pod, sandboxIP string) string {
	if p.GetSpec().GetHostNetwork() {
		return a.machine.ip
	}
	return sandboxIP
}

// acquireStart waits for a start token (MaxParallelStarts) and returns
// its release.
func (a *Agent) acquireStart(ctx context.Context) (func(), error) {
	if a.starts == nil {
		return func() {}, nil
	}
	select {
	case a.starts <- struct{}{}:
		return func() { <-a.starts }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func keyOf(p *corev1.Pod) string {
	return controller.KeyOf(p.GetMetadata().GetNamespace(), p.GetMetadata().GetName())
}

// sandboxRef is the sandbox containers start in.
type sandboxRef struct {
	id, ip string
	cfg    *runtimeapi.PodSandboxConfig
}

// createSandbox makes the pod's log directory and runs a sandbox.
func (a *Agent) createSandbox(ctx context.Context, pod *corev1.Pod, attempt uint32) (*sandboxRef, error) {
	if !pod.GetSpec().GetHostNetwork() {
		if problem := a.networkProblem(); problem != "" {
			a.recorder.Eventf(pod, events.EventTypeWarning, "NetworkNotReady", "network is not ready: %s", problem)
			return nil, fmt.Errorf("network is not ready: %s", problem)
		}
	}
	cfg := sandboxConfig(pod, attempt, a.cfg.PodLogDir, a.cfg.CgroupRoot)
	host, err := readResolvConf(a.cfg.ResolvConf)
	if err != nil {
		return nil, err
	}
	cfg.DnsConfig = dnsConfig(pod, a.cfg.ClusterDNS, a.cfg.ClusterDomain, host)
	if err := os.MkdirAll(cfg.GetLogDirectory(), 0o755); err != nil {
		return nil, fmt.Errorf("pod log directory: %w", err)
	}
	if err := a.ensurePodCgroup(pod); err != nil { // podcgroup.go
		return nil, err
	}
	handler, err := runtimeHandler(ctx, a.runtimeClass, pod)
	if err != nil {
		a.recorder.Eventf(pod, events.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return nil, err
	}
	// Once asked, a sandbox is made even if the agent is stopping: a call
	// abandoned half-way leaves the runtime with a sandbox it cannot
	// remove until it finishes. The runtime timeout still bounds it.
	id, err := a.rt.RunPodSandbox(context.WithoutCancel(ctx), cfg, handler)
	if err != nil {
		a.recorder.Eventf(pod, events.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %s", cri.Message(err))
		return nil, fmt.Errorf("creating sandbox: %w", err)
	}
	ip, err := a.obs.sandboxAddress(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s status: %w", id, err)
	}
	return &sandboxRef{id: id, ip: ip, cfg: cfg}, nil
}

// startContainer starts one container in sb, unless its crash-loop
// backoff says wait: backoff, image, environment and mounts, create,
// start. A reason it cannot start goes to res (for the status); it
// returns whether the runtime changed, and an error worth a retry.
func (a *Agent) startContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool, sb *sandboxRef,
	rt *podRuntime, paths map[string]string, get sources, res *syncResult) (bool, error) {
	m := pod.GetMetadata()
	name := c.GetName()
	now := a.cfg.Clock.Now()
	kind := "container"
	if init {
		kind = "init_container"
	}
	restartCount := int32(0)
	if prev := rt.latest(name, ""); prev != nil {
		if prev.running() || prev.exited() {
			restartCount = prev.RestartCount + 1
			finished := prev.FinishedAt
			if finished.IsZero() || prev.running() {
				finished = now // killed by this sync
			}
			key := m.GetUid() + "/" + name
			if in, delay, left := a.crashBackoff.inBackoffSince(key, finished, now); in {
				res.wait(name, reasonCrashLoopBackOff, fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
					delay, name, m.GetName(), m.GetNamespace(), m.GetUid()))
				res.requeueAfter(left)
				a.recorder.Eventf(pod, events.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)",
					name, m.GetName(), m.GetNamespace(), m.GetUid())
				return false, nil
			}
			a.crashBackoff.next(key, now)
		} else {
			restartCount = prev.RestartCount
		}
	}

	imageRef, ok, err := a.ensureImage(ctx, pod, c, sb.cfg, get, res)
	if !ok {
		a.m.startErrors.WithLabelValues(res.waiting[name].GetReason(), kind).Inc()
		return false, err
	}
	svcEnv, err := a.serviceEnv.forPod(ctx, pod)
	if err != nil {
		// The container starts without them rather than not at all.
		a.log.Warn("listing Services for the environment", zap.String("pod", keyOf(pod)), zap.Error(err))
	}
	env, err := containerEnv(ctx, pod, c, envContext{PodIP: a.podIP(pod, sb.ip), HostIP: a.machine.ip,
		Allocatable: a.machine.capacity(a.cfg.MaxPods, a.cfg.Capacity), ServiceEnv: svcEnv}, get)
	var mounts []*runtimeapi.Mount
	if err == nil {
		mounts, err = containerMounts(pod, c, paths)
	}
	if err == nil {
		var hosts *runtimeapi.Mount
		if hosts, err = ensureHostsMount(a.cfg.RootDir, pod, c, a.podIP(pod, sb.ip), a.cfg.ClusterDomain); hosts != nil {
			mounts = append(mounts, hosts)
		}
	}
	if err == nil {
		mounts, err = withTerminationLog(a.cfg.RootDir, pod, c, mounts) // termination.go
	}
	var eph *ephemeralOptions
	if err == nil {
		eph, err = ephemeralOptionsOf(pod, name, rt) // ephemeral.go: stdinOnce, the target's PID namespace
	}
	var cfg *runtimeapi.ContainerConfig
	if err == nil {
		var user imageUser
		if user, err = a.imageUserOf(ctx, pod, c, imageRef); err == nil { // securitycontext.go
			cfg, err = containerConfig(pod, c, containerParams{ImageRef: imageRef, RestartCount: restartCount, Env: env, Mounts: mounts, Init: init,
				OOMScoreAdj: oomScoreAdj(pod, c, a.machine.memoryBytes()), ImageUser: user, SeccompProfileRoot: a.cfg.SeccompProfileRoot, Ephemeral: eph})
		}
	}
	if err != nil {
		res.wait(name, reasonCreateContainerConfigError, err.Error())
		a.recorder.Eventf(pod, events.EventTypeWarning, "Failed", "Error: %v", err)
		a.m.startErrors.WithLabelValues(reasonCreateContainerConfigError, kind).Inc()
		return false, err
	}
	if err := os.MkdirAll(filepath.Join(sb.cfg.GetLogDirectory(), name), 0o755); err != nil {
		return false, fmt.Errorf("container log directory: %w", err)
	}
	// Create and start are not abandoned half-way either (see createSandbox).
	wctx := context.WithoutCancel(ctx)
	id, err := a.rt.CreateContainer(wctx, sb.id, cfg, sb.cfg)
	if err != nil {
		res.wait(name, reasonCreateContainerError, cri.Message(err))
		a.recorder.Eventf(pod, events.EventTypeWarning, "Failed", "Error: %s", cri.Message(err))
		a.m.startErrors.WithLabelValues(reasonCreateContainerError, kind).Inc()
		return false, fmt.Errorf("creating container %s: %w", name, err)
	}
	a.recorder.Eventf(pod, events.EventTypeNormal, "Created", "Created container %s", name)
	if err := a.rt.StartContainer(wctx, id); err != nil {
		res.wait(name, reasonRunContainerError, cri.Message(err))
		a.recorder.Eventf(pod, events.EventTypeWarning, "Failed", "Error: %s", cri.Message(err))
		a.m.startErrors.WithLabelValues(reasonRunContainerError, kind).Inc()
		if rerr := a.rt.RemoveContainer(ctx, id); rerr != nil {
			a.log.Info("removing a container that did not start", zap.String("container", id), zap.Error(rerr))
		}
		return true, fmt.Errorf("starting container %s: %w", name, err)
	}
	a.recorder.Eventf(pod, events.EventTypeNormal, "Started", "Started container %s", name)
	a.m.started.WithLabelValues(kind).Inc()
	a.postStart(ctx, pod, c, id, a.podIP(pod, sb.ip), res) // hooks.go; a failure kills it and says so in res
	return true, nil
}

// pullPolicy is the container's imagePullPolicy, defaulted from the tag.
func pullPolicy(c *corev1.Container) string {
	if p := c.GetImagePullPolicy(); p != "" {
		return p
	}
	image := c.GetImage()
	if i := strings.LastIndexAny(image, ":/@"); i < 0 || image[i] != ':' || image[i+1:] == "latest" {
		if !strings.Contains(image, "@") {
			return "Always"
		}
	}
	return "IfNotPresent"
}

// ensureImage makes c's image present as its pull policy says and returns
// its ref. When it cannot, it puts the reason in res (ErrImagePull, then
// ImagePullBackOff while the pull backoff lasts; ErrImageNeverPull) and
// returns false; the error is for failures worth a quick retry.
func (a *Agent) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sbCfg *runtimeapi.PodSandboxConfig, get sources, res *syncResult) (string, bool, error) {
	image, name := c.GetImage(), c.GetName()
	policy := pullPolicy(c)
	img, err := a.rt.ImageStatus(ctx, image)
	if err != nil {
		res.wait(name, "ImageInspectError", fmt.Sprintf("Failed to inspect image %q: %s", image, cri.Message(err)))
		return "", false, fmt.Errorf("image status of %q: %w", image, err)
	}
	if img != nil && policy != "Always" {
		return img.GetId(), true, nil
	}
	if img == nil && policy == "Never" {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		res.wait(name, reasonErrImageNeverPull, msg)
		a.recorder.Event(pod, events.EventTypeWarning, reasonErrImageNeverPull, msg)
		res.requeueAfter(a.cfg.ImagePullBackOff)
		return "", false, nil
	}
	key := pod.GetMetadata().GetUid() + "/" + image
	now := a.cfg.Clock.Now()
	if in, left := a.pullBackoff.inBackoffSinceUpdate(key, now); in {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		res.wait(name, reasonImagePullBackOff, msg)
		a.recorder.Event(pod, events.EventTypeNormal, "BackOff", msg)
		res.requeueAfter(left)
		return "", false, nil
	}
	a.recorder.Eventf(pod, events.EventTypeNormal, "Pulling", "Pulling image %q", image)
	start := time.Now()
	auths := pullAuths(ctx, pod, image, get, a.log)
	var ref string
	if len(auths) == 0 {
		ref, err = a.rt.PullImage(ctx, image, sbCfg)
	}
	// Each matching credential in turn, as the kubelet does; the last
	// failure is the one reported.
	for _, auth := range auths {
		if ref, err = a.rt.PullImageWithAuth(ctx, image, auth, sbCfg); err == nil {
			break
		}
	}
	if err != nil {
		delay := a.pullBackoff.next(key, now)
		msg := fmt.Sprintf("Failed to pull image %q: %s", image, cri.Message(err))
		res.wait(name, reasonErrImagePull, msg)
		a.recorder.Event(pod, events.EventTypeWarning, "Failed", msg)
		// Look again soon: the status then says ImagePullBackOff until the
		// backoff ends.
		res.requeueAfter(min(delay, time.Second))
		return "", false, nil
	}
	a.pullBackoff.reset(key)
	a.recorder.Eventf(pod, events.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", image, time.Since(start).Round(time.Millisecond))
	return ref, true, nil
}

// killPod stops every running container of the pod (the main containers
// in parallel, then the sidecars in reverse order, within the grace
// period) and then its ready sandboxes.
func (a *Agent) killPod(ctx context.Context, pod *corev1.Pod, rt *podRuntime, grace int64) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	// The main containers first, then the sidecars one by one, the last
	// declared first (sidecar.go), all within the one grace period.
	start := a.cfg.Clock.Now()
	for _, group := range stopOrder(pod, rt) {
		left := graceLeft(grace, a.cfg.Clock.Now().Sub(start))
		for _, c := range group {
			wg.Go(func() {
				if err := a.stopContainer(ctx, pod, c.Name, c.ID, left, ""); err != nil { // hooks.go: preStop, then stop
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	for _, s := range rt.Sandboxes {
		if !s.Ready {
			continue
		}
		if err := a.rt.StopPodSandbox(ctx, s.ID); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping sandbox %s: %w", s.ID, err))
		}
		a.obs.forgetSandbox(s.ID)
	}
	return errors.Join(errs...)
}

// removeAll stops and removes every sandbox (and so container) of rt, and
// forgets the pods' uids.
func (a *Agent) removeAll(ctx context.Context, pod *corev1.Pod, rt *podRuntime, grace int64) error {
	if err := a.killPod(ctx, pod, rt, grace); err != nil {
		return err
	}
	var errs []error
	for _, c := range rt.Containers {
		if !containedIn(c.SandboxID, rt.Sandboxes) {
			if err := a.rt.RemoveContainer(ctx, c.ID); err != nil && !cri.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	for _, s := range rt.Sandboxes {
		if err := a.rt.RemovePodSandbox(ctx, s.ID); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", s.ID, err))
		}
	}
	a.obs.forget(rt)
	return errors.Join(errs...)
}

func containedIn(id string, sbs []*sandboxInfo) bool {
	for _, s := range sbs {
		if s.ID == id {
			return true
		}
	}
	return false
}

// forgetPod drops the agent's memory of a pod uid and its directories.
func (a *Agent) forgetPod(uid, logDir string) {
	a.prober.removePod(uid)
	a.crashBackoff.forgetPrefix(uid + "/")
	a.pullBackoff.forgetPrefix(uid + "/")
	a.mu.Lock()
	delete(a.firstSeen, uid)
	delete(a.lastStatus, uid)
	delete(a.failures, uid)
	a.mu.Unlock()
	if uid != "" {
		a.tokens.forget(uid)
		if err := a.removePodCgroup(uid); err != nil { // podcgroup.go
			a.log.Warn("removing pod cgroup", zap.String("uid", uid), zap.Error(err))
		}
		if err := removePodDir(a.cfg.RootDir, uid); err != nil {
			a.log.Warn("removing pod directory", zap.String("uid", uid), zap.Error(err))
		}
	}
	if logDir != "" {
		if err := os.RemoveAll(logDir); err != nil {
			a.log.Warn("removing pod log directory", zap.String("uid", uid), zap.Error(err))
		}
	}
}

// cleanup removes what the runtime holds for pods that no longer exist
// (deleted while the agent was away, or replaced by a pod of the same
// name), with the grace period recorded on their containers.
func (a *Agent) cleanup(ctx context.Context, stale *podRuntime) error {
	grace := int64(-1)
	for _, c := range stale.Containers {
		grace = max(grace, c.GracePeriod)
	}
	if grace < 0 {
		grace = 30
	}
	uids := map[string]bool{}
	for _, s := range stale.Sandboxes {
		uids[s.UID] = true
	}
	for _, c := range stale.Containers {
		uids[c.UID] = true
	}
	a.log.Info("removing the containers of a pod that is gone", zap.Int("sandboxes", len(stale.Sandboxes)), zap.Int("containers", len(stale.Containers)))
	if err := a.removeAll(ctx, nil, stale, grace); err != nil {
		return err
	}
	for uid := range uids {
		a.forgetPod(uid, a.logDirOf(uid))
	}
	return nil
}

// logDirOf finds a pod's log directory by its uid (the name ends with it).
func (a *Agent) logDirOf(uid string) string {
	if uid == "" {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(a.cfg.PodLogDir, "*_"+uid))
	if len(matches) == 1 {
		return matches[0]
	}
	return ""
}

// terminate finishes a pod being deleted: its containers stop with the
// grace period, its sandboxes go, and the pod is deleted for good (grace
// period 0, on the condition that it is still the same pod).
func (a *Agent) terminate(ctx context.Context, pod *corev1.Pod, rt *podRuntime) error {
	m := pod.GetMetadata()
	a.prober.removePod(m.GetUid())
	if err := a.removeAll(ctx, pod, rt, gracePeriod(pod)); err != nil {
		return err
	}
	a.forgetPod(m.GetUid(), podLogDir(a.cfg.PodLogDir, pod))
	_, err := a.podClient.Delete(ctx, &metav1.DeleteRequest{
		Namespace: m.GetNamespace(), Name: m.GetName(),
		Preconditions:      &metav1.Preconditions{Uid: m.GetUid()},
		GracePeriodSeconds: proto.Int64(0),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or another pod now has the name
	}
	return err
}

// writeStatus computes the pod's status and writes it through
// UpdateStatus when it differs from the copy in the API, retrying on
// conflicts with the pod read afresh. The agent owns its pods' status:
// what another component changed (the node lifecycle controller marks the
// pods of a silent node not ready) is written back, but for the
// conditions the agent does not own, which are kept as the API has them.
// While the informer has not yet seen the agent's last write, the status
// is compared with that write instead.
func (a *Agent) writeStatus(ctx context.Context, pod *corev1.Pod, rt *podRuntime, res *syncResult) error {
	uid := pod.GetMetadata().GetUid()
	a.mu.Lock()
	w := a.lastStatus[uid]
	last, lastRV := w.status, w.rv
	a.mu.Unlock()
	base := pod
	if last != nil {
		base = proto.Clone(pod).(*corev1.Pod)
		base.Status = last
		if resourceVersion(pod) > lastRV {
			// Conditions others wrote since (a readiness gate's) count.
			base.Status = withOthers(last, pod.GetStatus())
		}
	}
	ready, started, _ := a.prober.snapshot(rt)
	st := computeStatus(statusInput{
		Pod: base, Runtime: rt, Waiting: res.waiting, Ready: ready, Started: started,
		HostIP: a.machine.ip, RuntimeName: a.scheme(), Now: a.cfg.Clock.Now(),
	})
	if res.rejectReason != "" {
		st.Phase, st.Reason, st.Message = "Failed", res.rejectReason, res.rejectMessage
	}
	if last != nil && resourceVersion(pod) < lastRV {
		if proto.Equal(st, last) {
			return nil // the informer is behind; the write it has yet to see is current
		}
	} else if st = withOthers(st, pod.GetStatus()); proto.Equal(st, pod.GetStatus()) {
		a.recordStatus(uid, st, resourceVersion(pod))
		return nil
	}
	cur := pod
	var written *corev1.Pod
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		next := proto.Clone(cur).(*corev1.Pod)
		next.Status = withOthers(st, cur.GetStatus())
		var err error
		written, err = a.podClient.UpdateStatus(ctx, next)
		if apierrors.IsConflict(err) {
			fresh, gerr := a.podClient.Get(ctx, pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName())
			if gerr != nil {
				return gerr
			}
			if fresh.GetMetadata().GetUid() != uid {
				written = nil
				return nil // replaced: its own sync writes its status
			}
			cur = fresh
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	if written != nil {
		a.recordStatus(uid, written.GetStatus(), resourceVersion(written))
	}
	return nil
}

// changedByOthers reports whether cur, an update of a pod the agent has
// written the status of, carries a status the agent did not write.
func (a *Agent) changedByOthers(cur *corev1.Pod) bool {
	uid := cur.GetMetadata().GetUid()
	a.mu.Lock()
	defer a.mu.Unlock()
	last, ok := a.lastStatus[uid]
	return ok && resourceVersion(cur) > last.rv && !proto.Equal(cur.GetStatus(), last.status)
}

// writtenStatus is a pod's status as the agent last wrote it (or found
// it already written) and the pod's resourceVersion then.
type writtenStatus struct {
	status *corev1.PodStatus
	rv     int64
}

// resourceVersion is the pod's resourceVersion as a number (an etcd
// revision), 0 when it has none.
func resourceVersion(p *corev1.Pod) int64 {
	rv, _ := strconv.ParseInt(p.GetMetadata().GetResourceVersion(), 10, 64)
	return rv
}

// recordStatus remembers the status in the API at resourceVersion rv (as
// written by the agent, or found equal to what it would write) and, the
// first time it shows the pod running, observes the pod's start latency.
func (a *Agent) recordStatus(uid string, st *corev1.PodStatus, rv int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastStatus[uid] = writtenStatus{status: st, rv: rv}
	if first, ok := a.firstSeen[uid]; ok && podRunning(st) {
		a.m.podStart.Observe(a.cfg.Clock.Now().Sub(first).Seconds())
		delete(a.firstSeen, uid)
	}
}
