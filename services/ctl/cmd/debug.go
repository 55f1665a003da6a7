package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// debug: kubectl debug's ephemeral-container case. It adds an ephemeral
// container to a running pod through Pods.UpdateEphemeralContainers
// (retrying on a conflict, as kubectl's patch needs no resourceVersion),
// and with -i (or --attach) waits for it to run and attaches to it as
// skiffctl attach does, or prints its log when it has already ended or
// cannot be attached to. The container is named debugger-<5 random
// characters> unless -c names it; --target joins a container's process
// namespace; --profile sets its security context as kubectl's profiles
// do for an ephemeral container. Copies of pods (--copy-to) and node
// debugging (node/NAME) are not supported by Skiff.

// debugProfiles are kubectl's debugging profiles, as each applies to an
// ephemeral container's security context.
var debugProfiles = map[string]func(*corev1.EphemeralContainer){
	"legacy": func(*corev1.EphemeralContainer) {},
	// general: may trace the processes it shares a namespace with.
	"general": func(ec *corev1.EphemeralContainer) { addCapabilities(ec, "SYS_PTRACE") },
	// baseline: nothing beyond the pod's.
	"baseline": func(ec *corev1.EphemeralContainer) { ec.SecurityContext = nil },
	// restricted: Kubernetes' restricted Pod Security Standard.
	"restricted": func(ec *corev1.EphemeralContainer) {
		ec.SecurityContext = &corev1.SecurityContext{
			RunAsNonRoot:             proto.Bool(true),
			AllowPrivilegeEscalation: proto.Bool(false),
			Capabilities:             &corev1.Capabilities{Drop: []string{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: "RuntimeDefault"},
		}
	},
	"netadmin": func(ec *corev1.EphemeralContainer) { addCapabilities(ec, "NET_ADMIN", "NET_RAW") },
	"sysadmin": func(ec *corev1.EphemeralContainer) {
		if ec.SecurityContext == nil {
			ec.SecurityContext = &corev1.SecurityContext{}
		}
		ec.SecurityContext.Privileged = proto.Bool(true)
	},
}

func addCapabilities(ec *corev1.EphemeralContainer, caps ...string) {
	if ec.SecurityContext == nil {
		ec.SecurityContext = &corev1.SecurityContext{}
	}
	if ec.SecurityContext.Capabilities == nil {
		ec.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	ec.SecurityContext.Capabilities.Add = append(ec.SecurityContext.Capabilities.Add, caps...)
}

// debugOptions are debug's flags.
type debugOptions struct {
	image, container, target, pullPolicy, profile string
	stdin, tty, quiet, attach, argsOnly           bool
	env                                           map[string]string
	args                                          []string
}

func (r *root) debugCmd() *cobra.Command {
	var o debugOptions
	c := &cobra.Command{
		Use:   "debug (POD | pod/NAME) --image=IMAGE [-i] [-t] [--target=CONTAINER] [-c NAME] [-- COMMAND [args...]]",
		Short: "Create debugging sessions for troubleshooting workloads",
		Long: `Add an ephemeral container to a running pod, to look at it from inside
without restarting it: the container runs once, in the pod's network and
volumes, with the image given (tools the pod's own images lack). With
--target it joins the process namespace of that container and sees its
processes. With -i it is attached to once running (its stdin and, with
-t, a terminal), as skiffctl attach does; without, its name is printed and
skiffctl returns (skiffctl attach or logs reach it later). Ephemeral
containers cannot be changed or removed: they go with the pod.`,
		Example: `  # An interactive shell beside the app, seeing its processes
  skiffctl debug -it web --image=busybox --target=app -- sh

  # A named debug container running one command; its output with logs
  skiffctl debug web --image=busybox -c probe -- wget -qO- localhost:8080
  skiffctl logs web -c probe`,
		RunE: func(cmd *cobra.Command, args []string) error {
			targets := args
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				targets, o.args = args[:dash], args[dash:]
			}
			if !cmd.Flags().Changed("attach") && o.stdin {
				o.attach = true
			}
			if err := o.validate(targets, cmd.Flags().Changed("attach")); err != nil {
				return err
			}
			return r.runDebug(cmd.Context(), targets[0], o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.image, "image", "", "container image to use for the debug container")
	f.StringVarP(&o.container, "container", "c", "", "container name to use for the debug container")
	f.StringVar(&o.target, "target", "", "target processes in this container name")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "keep stdin open on the container, even if nothing is attached")
	f.BoolVarP(&o.tty, "tty", "t", false, "allocate a TTY for the debugging container")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "suppress informational messages")
	f.BoolVar(&o.attach, "attach", false, "wait for the container to start running, and then attach as if 'skiffctl attach ...' were called (default: true with -i)")
	f.BoolVar(&o.argsOnly, "arguments-only", false, "pass everything after -- to the container as args instead of command")
	f.StringVar(&o.pullPolicy, "image-pull-policy", "", "the image pull policy for the container (default: the server's)")
	f.StringVar(&o.profile, "profile", "general", `options are "legacy", "general", "baseline", "restricted", "netadmin" or "sysadmin"`)
	f.StringToStringVar(&o.env, "env", nil, "environment variables to set in the container")
	return c
}

// validate checks the flags as kubectl's DebugOptions.Validate.
func (o *debugOptions) validate(targets []string, attachChanged bool) error {
	if o.attach && attachChanged && o.image == "" && o.container == "" {
		//lint:ignore ST1005 kubectl's message, word for word
		return errors.New("you must specify --container or create a new container using --image in order to attach.")
	}
	if o.image == "" {
		//lint:ignore ST1005 kubectl's message, word for word
		return errors.New("you must specify --image when not using --copy-to.")
	}
	if strings.TrimSpace(o.image) != o.image || strings.ContainsAny(o.image, " \t") {
		return fmt.Errorf("invalid image name %q: invalid reference format", o.image)
	}
	if len(targets) == 0 {
		return errors.New("NAME or filename is required for debug")
	}
	if len(targets) > 1 {
		return errors.New("debug: give one POD (Skiff debugs one pod at a time)")
	}
	switch o.pullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("invalid image pull policy: %s", o.pullPolicy)
	}
	if _, ok := debugProfiles[o.profile]; !ok {
		return fmt.Errorf("unknown profile: %s", o.profile)
	}
	if o.tty && !o.stdin {
		return errors.New("-i/--stdin is required for containers with -t/--tty=true")
	}
	return nil
}

// ephemeralContainer is the container o adds, named name.
func (o *debugOptions) ephemeralContainer(name string) *corev1.EphemeralContainer {
	ec := &corev1.EphemeralContainer{Name: name, Image: o.image, ImagePullPolicy: o.pullPolicy, Stdin: o.stdin, Tty: o.tty,
		TerminationMessagePolicy: "File", TargetContainerName: o.target}
	keys := make([]string, 0, len(o.env))
	for k := range o.env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ec.Env = append(ec.Env, &corev1.EnvVar{Name: k, Value: o.env[k]})
	}
	if o.argsOnly {
		ec.Args = o.args
	} else {
		ec.Command = o.args
	}
	debugProfiles[o.profile](ec)
	return ec
}

// debugContainerName is debugger-<suffix()>, drawn again while a
// container of the pod has it.
func debugContainerName(p *corev1.Pod, suffix func() string) string {
	taken := map[string]bool{}
	for _, c := range append(p.GetSpec().GetContainers(), p.GetSpec().GetInitContainers()...) {
		taken[c.GetName()] = true
	}
	for _, ec := range p.GetSpec().GetEphemeralContainers() {
		taken[ec.GetName()] = true
	}
	for {
		if n := "debugger-" + suffix(); !taken[n] {
			return n
		}
	}
}

// randomSuffix is 5 characters of Kubernetes' name alphabet, as
// utilrand.String.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

func (r *root) runDebug(ctx context.Context, target string, o debugOptions) error {
	if typ, name, ok := strings.Cut(target, "/"); ok {
		if typ != "pod" && typ != "pods" && typ != "po" {
			return fmt.Errorf("%q not supported by debug: only pods are (Skiff has no --copy-to or node debugging)", typ)
		}
		target = name
	}
	ns, err := r.namespace()
	if err != nil {
		return err
	}
	conn, err := r.connect()
	if err != nil {
		return err
	}
	pods := client.Pods(conn)
	pod, err := pods.Get(ctx, ns, target)
	if err != nil {
		return err
	}
	name := o.container
	if name == "" {
		name = debugContainerName(pod, randomSuffix)
		if !o.quiet {
			fmt.Fprintf(r.env.Out, "Defaulting debug container name to %s.\n", name)
		}
	}
	if o.target != "" && !o.quiet {
		fmt.Fprintf(r.env.Out, "Targeting container %q. If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n", o.target)
	}
	ec := o.ephemeralContainer(name)
	err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		next := proto.Clone(pod).(*corev1.Pod)
		next.Spec.EphemeralContainers = append(next.Spec.EphemeralContainers, ec)
		_, err := corev1.NewPodsClient(conn).UpdateEphemeralContainers(ctx, next)
		if err == nil {
			return nil
		}
		err = apierrors.FromError(err)
		if apierrors.IsConflict(err) {
			if fresh, gerr := pods.Get(ctx, ns, target); gerr == nil {
				pod = fresh
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if !o.attach {
		return nil
	}
	st, err := r.waitForEphemeral(ctx, pods, ns, target, name)
	if err != nil {
		return err
	}
	if st.GetState().GetTerminated() != nil {
		return r.debugLogs(ctx, ns, target, name)
	}
	if err := r.runExec(ctx, true, target, name, nil, o.stdin, o.tty, o.quiet); err != nil {
		var ee *exitError
		if errors.As(err, &ee) || ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(r.env.Err, "warning: couldn't attach to pod/%s, falling back to streaming logs: %v\n", target, err)
		return r.debugLogs(ctx, ns, target, name)
	}
	return nil
}

// waitForEphemeral watches the pod until its ephemeral container name
// runs or has ended, and returns its status. A waiting reason with a
// message (an image that cannot be pulled) is printed as a warning.
func (r *root) waitForEphemeral(ctx context.Context, pods *client.Resource[*corev1.Pod, *corev1.PodList], ns, podName, name string) (*corev1.ContainerStatus, error) {
	lastWarning := ""
	check := func(p *corev1.Pod) *corev1.ContainerStatus {
		for _, cs := range p.GetStatus().GetEphemeralContainerStatuses() {
			if cs.GetName() != name {
				continue
			}
			if s := cs.GetState(); s.GetRunning() != nil || s.GetTerminated() != nil {
				return cs
			}
			if w := cs.GetState().GetWaiting(); w.GetMessage() != "" && w.GetMessage() != lastWarning {
				lastWarning = w.GetMessage()
				fmt.Fprintf(r.env.Err, "Warning: container %s: %s\n", name, w.GetMessage())
			}
		}
		return nil
	}
	for {
		p, err := pods.Get(ctx, ns, podName)
		if err != nil {
			return nil, err
		}
		if cs := check(p); cs != nil {
			return cs, nil
		}
		w, err := pods.Watch(ctx, &metav1.ListOptions{Namespace: ns, FieldSelector: "metadata.name=" + podName, ResourceVersion: p.GetMetadata().GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		for {
			ev, err := w.Next()
			if err != nil {
				w.Stop()
				if errors.Is(err, io.EOF) || apierrors.IsServiceUnavailable(err) || apierrors.IsExpired(err) {
					break // read the pod again and watch on
				}
				return nil, err
			}
			if ev.Type == "DELETED" {
				w.Stop()
				return nil, apierrors.NewNotFound("pods", podName)
			}
			if ev.Type == "BOOKMARK" {
				continue
			}
			if cs := check(ev.Object); cs != nil {
				w.Stop()
				return cs, nil
			}
		}
	}
}

// debugLogs prints the log of the debug container.
func (r *root) debugLogs(ctx context.Context, ns, podName, name string) error {
	conn, err := r.connect()
	if err != nil {
		return err
	}
	stream, err := corev1.NewPodsClient(conn).Logs(ctx, &corev1.PodLogOptions{Namespace: ns, Name: podName, Container: name})
	if err != nil {
		return apierrors.FromError(err)
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return apierrors.FromError(err)
		}
		if _, err := r.env.Out.Write(chunk.GetData()); err != nil {
			return err
		}
	}
}
