package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// kubernetesPlugins are kube-scheduler plugins Skiff does not have as
// configurable plugins. A file may disable them (nothing to do) but not
// enable them; SchedulingGates, which Skiff always runs, it may not disable.
var kubernetesPlugins = []string{
	"PrioritySort", "SchedulingGates", "NodePorts", "VolumeRestrictions", "EBSLimits", "GCEPDLimits",
	"NodeVolumeLimits", "AzureDiskLimits", "VolumeZone",
	"ImageLocality", "DynamicResources",
}

// multiPoint enables a plugin at every extension point it implements.
const multiPoint = "multiPoint"

// otherPoints are kube-scheduler extension points where Skiff runs no
// plugin: a file may disable plugins there but enable none (except the
// queue's PrioritySort, which is what Skiff's queue does anyway).
var otherPoints = []string{"queueSort", "preEnqueue", "permit", "postBind"}

type enabledRef struct {
	PluginRef
	node *yaml.Node
	path string
}

type pluginSet struct {
	enabled     []enabledRef
	disabled    map[string]bool
	disabledAll bool
}

func (s *pluginSet) isDisabled(name string) bool {
	return s != nil && (s.disabledAll || s.disabled[name])
}

func (s *pluginSet) enabledList() []enabledRef {
	if s == nil {
		return nil
	}
	return s.enabled
}

func (d *decoder) available() string {
	names := make([]string, 0, len(d.known))
	for n := range d.known {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// profile decodes one profile (n nil: the default profile).
func (d *decoder) profile(n *yaml.Node, path string) Profile {
	p := Profile{SchedulerName: DefaultSchedulerName, PluginArgs: map[string]any{}}
	sets := map[string]*pluginSet{}
	var pluginsNode *yaml.Node
	argsSeen := map[string]*yaml.Node{}
	if n != nil {
		d.mapping(n, path, map[string]func(*yaml.Node, string){
			"schedulerName": func(v *yaml.Node, fp string) {
				if d.str(v, fp, &p.SchedulerName) && p.SchedulerName == "" {
					d.fail(v, fp, "must not be empty")
					p.SchedulerName = DefaultSchedulerName
				}
			},
			"percentageOfNodesToScore": func(v *yaml.Node, fp string) {
				if x, ok := d.percentage(v, fp); ok {
					p.PercentageOfNodesToScore = &x
				}
			},
			"plugins": func(v *yaml.Node, fp string) {
				pluginsNode = v
				fields := map[string]func(*yaml.Node, string){
					multiPoint: func(v *yaml.Node, pp string) { sets[multiPoint] = d.pluginSet(v, pp, multiPoint) },
				}
				for _, point := range ExtensionPoints {
					fields[string(point)] = func(v *yaml.Node, pp string) { sets[string(point)] = d.pluginSet(v, pp, string(point)) }
				}
				for _, point := range otherPoints {
					fields[point] = func(v *yaml.Node, pp string) { d.pluginSet(v, pp, point) }
				}
				d.mapping(v, fp, fields)
			},
			"pluginConfig": func(v *yaml.Node, fp string) {
				for i, item := range d.seq(v, fp) {
					d.pluginConfig(item, fmt.Sprintf("%s[%d]", fp, i), &p, argsSeen)
				}
			},
		})
	}
	p.Plugins = d.merge(sets)
	if len(p.Plugins[Bind]) == 0 {
		at, fp := n, path
		if pluginsNode != nil {
			at, fp = pluginsNode, path+".plugins"
		}
		d.fail(at, fp, "no bind plugin is enabled: a profile needs one (%s)", DefaultBinder)
	}
	if _, ok := p.PluginArgs[NodeResourcesFit]; !ok {
		p.PluginArgs[NodeResourcesFit] = DefaultNodeResourcesFitArgs()
	}
	if _, ok := p.PluginArgs[NodeResourcesBalancedAllocation]; !ok {
		p.PluginArgs[NodeResourcesBalancedAllocation] = DefaultNodeResourcesBalancedAllocationArgs()
	}
	return p
}

// pluginSet decodes {enabled: [...], disabled: [...]} at point.
func (d *decoder) pluginSet(n *yaml.Node, path, point string) *pluginSet {
	s := &pluginSet{disabled: map[string]bool{}}
	supported := point == multiPoint || slices.Contains(ExtensionPoints, ExtensionPoint(point))
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"enabled": func(v *yaml.Node, fp string) {
			seen := map[string]int{}
			for i, item := range d.seq(v, fp) {
				ip := fmt.Sprintf("%s[%d]", fp, i)
				ref, ok := d.pluginRef(item, ip)
				if !ok {
					continue
				}
				nameNode := fieldNode(item, "name")
				switch {
				case !supported:
					if point == "queueSort" && ref.Name == "PrioritySort" {
						continue
					}
					d.fail(nameNode, ip+".name", "skiff-scheduler runs no %s plugins (its queue sorts by priority); it cannot enable %q", point, ref.Name)
					continue
				case slices.Contains(kubernetesPlugins, ref.Name) && !d.isKnown(ref.Name):
					d.fail(nameNode, ip+".name", "plugin %q is a kube-scheduler plugin that skiff-scheduler does not have (available: %s)", ref.Name, d.available())
					continue
				case !d.isKnown(ref.Name):
					d.fail(nameNode, ip+".name", "unknown plugin %q (available: %s)", ref.Name, d.available())
					continue
				case point != multiPoint && !d.known.implements(ref.Name, ExtensionPoint(point)):
					d.fail(nameNode, ip+".name", "plugin %q does not implement %s (it implements: %s)", ref.Name, point, pointList(d.known[ref.Name]))
					continue
				}
				if prev, dup := seen[ref.Name]; dup {
					d.fail(nameNode, ip+".name", "plugin %q is already enabled at %s[%d]", ref.Name, fp, prev)
					continue
				}
				seen[ref.Name] = i
				s.enabled = append(s.enabled, enabledRef{PluginRef: ref, node: item, path: ip})
			}
		},
		"disabled": func(v *yaml.Node, fp string) {
			for i, item := range d.seq(v, fp) {
				ip := fmt.Sprintf("%s[%d]", fp, i)
				ref, ok := d.pluginRef(item, ip)
				if !ok {
					continue
				}
				switch {
				case ref.Name == "*":
					s.disabledAll = true
				case ref.Name == SchedulingGates:
					d.fail(fieldNode(item, "name"), ip+".name", "plugin %q cannot be disabled: skiff-scheduler always keeps pods with spec.schedulingGates out of its queue", ref.Name)
				case !d.isKnown(ref.Name) && !slices.Contains(kubernetesPlugins, ref.Name):
					d.fail(fieldNode(item, "name"), ip+".name", "unknown plugin %q (available: %s)", ref.Name, d.available())
				default:
					s.disabled[ref.Name] = true
				}
			}
		},
	})
	return s
}

// pluginRef decodes {name, weight}.
func (d *decoder) pluginRef(n *yaml.Node, path string) (PluginRef, bool) {
	var ref PluginRef
	ok := true
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"name": func(v *yaml.Node, fp string) { d.str(v, fp, &ref.Name) },
		"weight": func(v *yaml.Node, fp string) {
			var w int64
			if !d.int(v, fp, &w) {
				ok = false
				return
			}
			if w < 1 || w > 100 {
				d.fail(v, fp, "must be between 1 and 100, not %d", w)
				ok = false
				return
			}
			ref.Weight = int32(w)
		},
	})
	if n.Kind == yaml.MappingNode && ref.Name == "" {
		d.fail(n, path+".name", "required: the plugin's name")
		return ref, false
	}
	return ref, ok && n.Kind == yaml.MappingNode
}

func fieldNode(n *yaml.Node, name string) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				return n.Content[i+1]
			}
		}
	}
	return n
}

func pointList(ps []ExtensionPoint) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// merge computes each extension point's plugins: the defaults that
// implement it, less the disabled ones, then multiPoint's enabled plugins
// that implement it, then the point's own enabled plugins (a plugin
// already there moves to its new position, keeping its weight unless a
// new one is given).
func (d *decoder) merge(sets map[string]*pluginSet) map[ExtensionPoint][]PluginRef {
	out := map[ExtensionPoint][]PluginRef{}
	multi := sets[multiPoint]
	for _, point := range ExtensionPoints {
		specific := sets[string(point)]
		var list []PluginRef
		for _, def := range DefaultPlugins() {
			if !d.known.implements(def.Name, point) || multi.isDisabled(def.Name) || specific.isDisabled(def.Name) {
				continue
			}
			list = append(list, def)
		}
		put := func(ref PluginRef, move bool) {
			i := slices.IndexFunc(list, func(r PluginRef) bool { return r.Name == ref.Name })
			if i >= 0 {
				if ref.Weight == 0 {
					ref.Weight = list[i].Weight
				}
				if !move {
					list[i] = ref
					return
				}
				list = slices.Delete(list, i, i+1)
			}
			list = append(list, ref)
		}
		for _, e := range multi.enabledList() {
			if d.known.implements(e.Name, point) && !specific.isDisabled(e.Name) {
				put(e.PluginRef, false)
			}
		}
		for _, e := range specific.enabledList() {
			put(e.PluginRef, true)
		}
		for i := range list {
			switch {
			case point != Score:
				list[i].Weight = 0
			case list[i].Weight == 0:
				list[i].Weight = 1
			}
		}
		out[point] = list
	}
	return out
}

// pluginConfig decodes one {name, args} entry into p.PluginArgs.
func (d *decoder) pluginConfig(n *yaml.Node, path string, p *Profile, seen map[string]*yaml.Node) {
	var name string
	var args *yaml.Node
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"name": func(v *yaml.Node, fp string) { d.str(v, fp, &name) },
		"args": func(v *yaml.Node, _ string) { args = v },
	})
	if n.Kind != yaml.MappingNode {
		return
	}
	nameNode := fieldNode(n, "name")
	switch {
	case name == "":
		d.fail(n, path+".name", "required: the plugin's name")
		return
	case !d.isKnown(name):
		d.fail(nameNode, path+".name", "unknown plugin %q (available: %s)", name, d.available())
		return
	}
	if prev, dup := seen[name]; dup {
		d.fail(nameNode, path+".name", "plugin %q is already configured at line %d", name, prev.Line)
		return
	}
	seen[name] = nameNode
	ap := path + ".args"
	// A kube-scheduler file may name the args' own apiVersion and kind.
	ignore := func(v *yaml.Node, fp string) { var s string; d.str(v, fp, &s) }
	switch name {
	case NodeResourcesFit:
		a := DefaultNodeResourcesFitArgs()
		d.mapping(args, ap, map[string]func(*yaml.Node, string){
			"apiVersion": ignore,
			"kind":       ignore,
			"scoringStrategy": func(v *yaml.Node, fp string) {
				d.mapping(v, fp, map[string]func(*yaml.Node, string){
					"type": func(v *yaml.Node, tp string) {
						if d.str(v, tp, &a.ScoringStrategy.Type) {
							switch a.ScoringStrategy.Type {
							case LeastAllocated, MostAllocated:
							case "RequestedToCapacityRatio":
								d.fail(v, tp, "RequestedToCapacityRatio is not supported by skiff-scheduler (use %s or %s)", LeastAllocated, MostAllocated)
							default:
								d.fail(v, tp, "must be %s or %s, not %q", LeastAllocated, MostAllocated, a.ScoringStrategy.Type)
							}
						}
					},
					"resources":                func(v *yaml.Node, rp string) { a.ScoringStrategy.Resources = d.resources(v, rp) },
					"requestedToCapacityRatio": d.unsupported("RequestedToCapacityRatio is not supported by skiff-scheduler"),
				})
			},
			"ignoredResources":      d.unsupported("not supported by skiff-scheduler"),
			"ignoredResourceGroups": d.unsupported("not supported by skiff-scheduler"),
		})
		p.PluginArgs[name] = a
	case NodeResourcesBalancedAllocation:
		a := DefaultNodeResourcesBalancedAllocationArgs()
		d.mapping(args, ap, map[string]func(*yaml.Node, string){
			"apiVersion": ignore,
			"kind":       ignore,
			"resources":  func(v *yaml.Node, rp string) { a.Resources = d.resources(v, rp) },
		})
		p.PluginArgs[name] = a
	default:
		d.mapping(args, ap, map[string]func(*yaml.Node, string){"apiVersion": ignore, "kind": ignore})
	}
}

// resources decodes [{name, weight}] (weight 1..100, default 1; names unique).
func (d *decoder) resources(n *yaml.Node, path string) []ResourceSpec {
	var out []ResourceSpec
	seen := map[string]bool{}
	items := d.seq(n, path)
	if n.Kind == yaml.SequenceNode && len(items) == 0 {
		d.fail(n, path, "must list at least one resource")
	}
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		r := ResourceSpec{Weight: 1}
		d.mapping(item, ip, map[string]func(*yaml.Node, string){
			"name": func(v *yaml.Node, fp string) { d.str(v, fp, &r.Name) },
			"weight": func(v *yaml.Node, fp string) {
				if d.int(v, fp, &r.Weight) && (r.Weight < 1 || r.Weight > 100) {
					d.fail(v, fp, "must be between 1 and 100, not %d", r.Weight)
				}
			},
		})
		switch {
		case item.Kind != yaml.MappingNode:
		case r.Name == "":
			d.fail(item, ip+".name", "required: the resource's name")
		case seen[r.Name]:
			d.fail(fieldNode(item, "name"), ip+".name", "resource %q is already listed", r.Name)
		default:
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	return out
}

func (d *decoder) isKnown(name string) bool {
	_, ok := d.known[name]
	return ok
}
