package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/printers"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	metricsv1beta1 "skiff.dev/proto/metrics/v1beta1"
)

// top reads the resource metrics API (metrics.k8s.io/v1beta1, which the
// apiserver serves by asking the node agents) and prints kubectl top's
// tables: CPU in millicores ("250m"), memory in MiB ("64Mi"), both
// rounded as kubectl does (CPU up, memory down), sums taken before.

func (r *root) topCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "top",
		Short: "Display resource (CPU/memory) usage",
		Long: `Display the resource (CPU/memory) usage of nodes or pods, from the
resource metrics API (metrics.k8s.io/v1beta1) the apiserver serves by asking
each node agent for the CRI's stats. CPU is averaged over a window of at
least a second (a first call waits for it); memory is the working set.`,
	}
	c.AddCommand(r.topPodCmd(), r.topNodeCmd())
	return c
}

// usage is one row's figures: CPU in nanocores (the metrics API's unit,
// finer than the quantities of package quantity), memory in bytes.
type usage struct{ nanoCores, bytes int64 }

// parseCPU reads a "cpu" usage: nanocores ("10500000n", as metrics-server
// and Skiff's apiserver write it) or any quantity of at least 1m.
func parseCPU(s string) (int64, error) {
	if n, ok := strings.CutSuffix(s, "n"); ok {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("invalid quantity %q: not a whole number of nanocores", s)
		}
		return v, nil
	}
	q, err := quantity.Parse(s)
	if err != nil {
		return 0, err
	}
	if q.MilliValue() > math.MaxInt64/1_000_000 {
		return 0, fmt.Errorf("invalid quantity %q: out of range", s)
	}
	return q.MilliValue() * 1e6, nil
}

func parseUsage(what string, list map[string]string) (usage, error) {
	cpu, err := parseCPU(list["cpu"])
	if err != nil {
		return usage{}, fmt.Errorf("%s: usage cpu: %w", what, err)
	}
	mem, err := quantity.Parse(list["memory"])
	if err != nil {
		return usage{}, fmt.Errorf("%s: usage memory: %w", what, err)
	}
	return usage{cpu, mem.Value()}, nil
}

func (u usage) add(v usage) usage { return usage{u.nanoCores + v.nanoCores, u.bytes + v.bytes} }

// milliCPU rounds up, as Kubernetes' Quantity.MilliValue.
func (u usage) milliCPU() int64 { return (u.nanoCores + 999_999) / 1_000_000 }

func (u usage) cells() []string {
	return []string{strconv.FormatInt(u.milliCPU(), 10) + "m", strconv.FormatInt(u.bytes/(1<<20), 10) + "Mi"}
}

// sortUsage orders rows by --sort-by: cpu or memory (highest first), or
// as listed ("").
func sortUsage[T any](rows []T, by string, of func(T) usage) {
	switch by {
	case "cpu":
		slices.SortStableFunc(rows, func(a, b T) int { return cmp.Compare(of(b).nanoCores, of(a).nanoCores) })
	case "memory":
		slices.SortStableFunc(rows, func(a, b T) int { return cmp.Compare(of(b).bytes, of(a).bytes) })
	}
}

func checkSortBy(by string) error {
	if by != "" && by != "cpu" && by != "memory" {
		return fmt.Errorf("--sort-by %q: must be cpu or memory", by)
	}
	return nil
}

// metricsError words a failure of the metrics API as kubectl does when
// the server has none.
func metricsError(err error) error {
	if status.Code(err) == codes.Unimplemented {
		//lint:ignore ST1005 kubectl's words, capital included
		return errors.New("Metrics API not available")
	}
	return apierrors.FromError(err)
}

func (r *root) topPodCmd() *cobra.Command {
	var (
		allNamespaces, containers, noHeaders bool
		selector, sortBy                     string
	)
	c := &cobra.Command{
		Use:     "pod [NAME | -l label]",
		Aliases: []string{"pods", "po"},
		Short:   "Display resource (CPU/memory) usage of pods",
		Long: `Display the resource (CPU/memory) usage of pods: the sum of their running
containers' (--containers: each container). Pods without running containers,
or whose node's agent does not answer, are not listed.`,
		Example: `  skiffctl top pod
  skiffctl top pod -A --sort-by=cpu
  skiffctl top pod web-7d9f8c6b5-x2x4z --containers
  skiffctl top pod -l app=web`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSortBy(sortBy); err != nil {
				return err
			}
			if len(args) == 1 && (selector != "" || allNamespaces) {
				return errors.New("a pod name cannot go with --selector or --all-namespaces")
			}
			ns, err := r.namespace()
			if err != nil {
				return err
			}
			if allNamespaces {
				ns = ""
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			ctx, cancel := r.requestContext(cmd.Context())
			defer cancel()
			pods := metricsv1beta1.NewPodsClient(conn)
			var items []*metricsv1beta1.PodMetrics
			if len(args) == 1 {
				pm, err := pods.Get(ctx, &metav1.GetRequest{Namespace: ns, Name: args[0]})
				if apierrors.IsNotFound(err) && apierrors.FromError(err).Status.GetDetails().GetKind() == "pods.metrics.k8s.io" {
					//lint:ignore ST1005 kubectl's words, capital included
					return fmt.Errorf("Metrics not available for pod %s/%s", ns, args[0])
				}
				if err != nil {
					return metricsError(err)
				}
				items = []*metricsv1beta1.PodMetrics{pm}
			} else {
				list, err := pods.List(ctx, &metav1.ListOptions{Namespace: ns, LabelSelector: selector})
				if err != nil {
					return metricsError(err)
				}
				items = list.GetItems()
			}
			if len(items) == 0 {
				if allNamespaces {
					fmt.Fprintln(r.env.Err, "No resources found")
				} else {
					fmt.Fprintf(r.env.Err, "No resources found in %s namespace.\n", ns)
				}
				return nil
			}
			return r.printPodUsage(items, allNamespaces, containers, noHeaders, sortBy)
		},
	}
	f := c.Flags()
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "pods of every namespace")
	f.StringVarP(&selector, "selector", "l", "", "label selector (app=web, tier in (a,b), !canary)")
	f.BoolVar(&containers, "containers", false, "a row per container")
	f.BoolVar(&noHeaders, "no-headers", false, "no header line")
	f.StringVar(&sortBy, "sort-by", "", "sort by cpu or memory (highest first)")
	return c
}

func (r *root) printPodUsage(items []*metricsv1beta1.PodMetrics, withNamespace, containers bool, noHeaders bool, sortBy string) error {
	type row struct {
		ns, pod, container string
		u                  usage
	}
	var rows []row
	for _, pm := range items {
		m := pm.GetMetadata()
		var sum usage
		for _, c := range pm.GetContainers() {
			u, err := parseUsage(fmt.Sprintf("pod %s/%s container %s", m.GetNamespace(), m.GetName(), c.GetName()), c.GetUsage())
			if err != nil {
				return err
			}
			if containers {
				rows = append(rows, row{m.GetNamespace(), m.GetName(), c.GetName(), u})
			}
			sum = sum.add(u)
		}
		if !containers {
			rows = append(rows, row{m.GetNamespace(), m.GetName(), "", sum})
		}
	}
	sortUsage(rows, sortBy, func(x row) usage { return x.u })
	// [NAMESPACE] NAME|POD [NAME] CPU MEMORY: the optional columns only
	// with -A and --containers.
	line := func(ns, pod, container string, figures ...string) []string {
		var cells []string
		if withNamespace {
			cells = append(cells, ns)
		}
		cells = append(cells, pod)
		if containers {
			cells = append(cells, container)
		}
		return append(cells, figures...)
	}
	t := printers.Table{Header: line("NAMESPACE", "NAME", "", "CPU(cores)", "MEMORY(bytes)")}
	if containers {
		t.Header = line("NAMESPACE", "POD", "NAME", "CPU(cores)", "MEMORY(bytes)")
	}
	for _, x := range rows {
		t.Rows = append(t.Rows, line(x.ns, x.pod, x.container, x.u.cells()...))
	}
	return printers.PrintTable(r.env.Out, t, noHeaders)
}

func (r *root) topNodeCmd() *cobra.Command {
	var (
		noHeaders        bool
		selector, sortBy string
	)
	c := &cobra.Command{
		Use:     "node [NAME | -l label]",
		Aliases: []string{"nodes", "no"},
		Short:   "Display resource (CPU/memory) usage of nodes",
		Long: `Display the resource (CPU/memory) usage of nodes: the whole machine's
(pods and system daemons), and as a percentage of the node's allocatable.
A node whose agent does not answer shows <unknown>.`,
		Example: `  skiffctl top node
  skiffctl top node node-1
  skiffctl top node --sort-by=memory`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSortBy(sortBy); err != nil {
				return err
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			ctx, cancel := r.requestContext(cmd.Context())
			defer cancel()
			metrics := metricsv1beta1.NewNodesClient(conn)
			var items []*metricsv1beta1.NodeMetrics
			var nodes []*corev1.Node
			if len(args) == 1 {
				nm, err := metrics.Get(ctx, &metav1.GetRequest{Name: args[0]})
				if err != nil {
					return metricsError(err)
				}
				items = []*metricsv1beta1.NodeMetrics{nm}
				n, err := client.Nodes(conn).Get(ctx, "", args[0])
				if err != nil {
					return apierrors.FromError(err)
				}
				nodes = []*corev1.Node{n}
			} else {
				list, err := metrics.List(ctx, &metav1.ListOptions{LabelSelector: selector})
				if err != nil {
					return metricsError(err)
				}
				items = list.GetItems()
				if nodes, err = listAll(ctx, client.Nodes(conn), &metav1.ListOptions{LabelSelector: selector}); err != nil {
					return apierrors.FromError(err)
				}
			}
			if len(nodes) == 0 {
				fmt.Fprintln(r.env.Err, "No resources found")
				return nil
			}
			return r.printNodeUsage(nodes, items, noHeaders, sortBy)
		},
	}
	f := c.Flags()
	f.StringVarP(&selector, "selector", "l", "", "label selector (node-role=worker)")
	f.BoolVar(&noHeaders, "no-headers", false, "no header line")
	f.StringVar(&sortBy, "sort-by", "", "sort by cpu or memory (highest first)")
	return c
}

func (r *root) printNodeUsage(nodes []*corev1.Node, items []*metricsv1beta1.NodeMetrics, noHeaders bool, sortBy string) error {
	byName := map[string]*metricsv1beta1.NodeMetrics{}
	for _, nm := range items {
		byName[nm.GetMetadata().GetName()] = nm
	}
	type row struct {
		name      string
		u         usage
		allocated usage
		known     bool
	}
	var rows []row
	for _, n := range nodes {
		x := row{name: n.GetMetadata().GetName()}
		if nm, ok := byName[x.name]; ok {
			u, err := parseUsage("node "+x.name, nm.GetUsage())
			if err != nil {
				return err
			}
			x.u, x.known = u, true
			// An allocatable that does not parse shows no percentage.
			if q, err := quantity.Parse(n.GetStatus().GetAllocatable()["cpu"]); err == nil {
				x.allocated.nanoCores = q.MilliValue() * 1e6
			}
			if q, err := quantity.Parse(n.GetStatus().GetAllocatable()["memory"]); err == nil {
				x.allocated.bytes = q.Value()
			}
		}
		rows = append(rows, x)
	}
	sortUsage(rows, sortBy, func(x row) usage { return x.u })
	// Nodes without metrics last, as kubectl prints them.
	slices.SortStableFunc(rows, func(a, b row) int {
		if a.known == b.known {
			return 0
		}
		if a.known {
			return -1
		}
		return 1
	})
	t := printers.Table{Header: []string{"NAME", "CPU(cores)", "CPU%", "MEMORY(bytes)", "MEMORY%"}}
	for _, x := range rows {
		if !x.known {
			t.Rows = append(t.Rows, []string{x.name, "<unknown>", "<unknown>", "<unknown>", "<unknown>"})
			continue
		}
		c := x.u.cells()
		t.Rows = append(t.Rows, []string{x.name, c[0], percent(x.u.nanoCores, x.allocated.nanoCores), c[1], percent(x.u.bytes, x.allocated.bytes)})
	}
	return printers.PrintTable(r.env.Out, t, noHeaders)
}

// percent is used/of as kubectl prints it: a whole percentage, truncated;
// "<unknown>" when of is not known.
func percent(used, of int64) string {
	if of <= 0 {
		return "<unknown>"
	}
	return strconv.FormatInt(int64(float64(used)/float64(of)*100), 10) + "%"
}
