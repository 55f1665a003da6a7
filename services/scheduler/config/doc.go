// Package config loads the scheduler's policy file (--config): which
// plugins run at which extension point, score weights, the percentage of
// nodes to score, backoff, and several named profiles chosen by a pod's
// spec.schedulerName. The file is a Kubernetes KubeSchedulerConfiguration
// (apiVersion kubescheduler.config.k8s.io/v1), so a kube-scheduler policy
// applies unchanged as long as it uses the plugins and fields Skiff has:
//
//	apiVersion: kubescheduler.config.k8s.io/v1
//	kind: KubeSchedulerConfiguration
//	percentageOfNodesToScore: 50
//	profiles:
//	  - schedulerName: default-scheduler
//	  - schedulerName: packer
//	    plugins:
//	      score:
//	        disabled: [{name: NodeResourcesBalancedAllocation}]
//	        enabled:  [{name: NodeResourcesFit, weight: 5}]
//	    pluginConfig:
//	      - name: NodeResourcesFit
//	        args:
//	          scoringStrategy: {type: MostAllocated}
//
// Each profile starts from the default plugins (DefaultPlugins, enabled at
// every extension point each implements, as Kubernetes' multiPoint does);
// "disabled" removes plugins ("*": all defaults) at a point or, under
// multiPoint, everywhere; "enabled" adds them, after the defaults, in the
// order written, or moves a default to that position with a new weight.
//
// A bad file is refused as a whole, with every problem found, each with
// its file, line, column and field path, e.g.
//
//	policy.yaml:12:17: profiles[0].plugins.score.enabled[0].name: unknown plugin "NodeResourceFit" (known: ...)
//
// The package owns the file format, defaults and validation, and the typed
// args of the built-in plugins. It does not know what plugins do: which
// exist and which extension points each implements is handed to it
// (KnownPlugins, built from the plugin registry).
package config
