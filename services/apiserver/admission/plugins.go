package admission

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/informer"
)

// Deps is what plugins are built from.
type Deps struct {
	// Loopback is the apiserver's connection to itself (as system:apiserver).
	Loopback grpc.ClientConnInterface
	// Informers is the shared informer factory on Loopback.
	Informers *informer.Factory
	Options   *Options
	Metrics   *Metrics
	Logger    *zap.Logger
	Now       func() time.Time
}

// Factory builds one plugin: a value implementing MutationInterface,
// ValidationInterface or both (and Starter when it has background work).
type Factory func(d *Deps) (any, error)

// catalogue is every plugin by its --enable-admission-plugins name. Adding a
// plugin is a file with its type and one line here.
var catalogue = map[string]Factory{
	NamespaceLifecycleName:           newNamespaceLifecycle,
	LimitRangerName:                  newLimitRanger,
	ServiceAccountName:               newServiceAccount,
	DefaultTolerationSecondsName:     newDefaultTolerationSeconds,
	ResourceQuotaName:                newResourceQuota,
	MutatingWebhookName:              newMutatingWebhook,
	ValidatingWebhookName:            newValidatingWebhook,
	DefaultStorageClassName:          newDefaultStorageClass,
	StorageObjectInUseProtectionName: newStorageObjectInUseProtection,
	NodeRestrictionName:              newNodeRestriction,
	PriorityName:                     newPriority,
	RuntimeClassName:                 newRuntimeClass,
}

// Known lists the plugin names, sorted.
func Known() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Config is what New needs besides the options.
type Config struct {
	Loopback   grpc.ClientConnInterface
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	Now        func() time.Time
}

// New builds the chain of the enabled plugins. With none it returns nil,
// which admits everything at no cost.
func New(o Options, cfg Config) (*Chain, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	names := o.Enabled()
	if len(names) == 0 {
		return nil, nil
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger.Named("admission")
	m := NewMetrics(cfg.Registerer)
	d := &Deps{
		Loopback:  cfg.Loopback,
		Informers: informer.NewFactory(informer.FactoryOptions{Logger: log}),
		Options:   &o,
		Metrics:   m,
		Logger:    log,
		Now:       cfg.Now,
	}
	c := &Chain{names: names, informers: d.Informers, m: m, log: log}
	for _, name := range names {
		p, err := catalogue[name](d)
		if err != nil {
			return nil, fmt.Errorf("admission plugin %s: %w", name, err)
		}
		used := false
		if mp, ok := p.(MutationInterface); ok {
			c.mutating = append(c.mutating, entry[MutationInterface]{name, mp, m.pluginSeries(name, stepAdmit)})
			used = true
		}
		if vp, ok := p.(ValidationInterface); ok {
			c.validating = append(c.validating, entry[ValidationInterface]{name, vp, m.pluginSeries(name, stepValidate)})
			used = true
		}
		if !used {
			return nil, fmt.Errorf("admission plugin %s implements neither Admit nor Validate", name)
		}
		if sp, ok := p.(Starter); ok {
			c.starters = append(c.starters, entry[Starter]{name: name, p: sp})
		}
	}
	return c, nil
}

// notReadyWait bounds how long a request waits for a plugin's informers
// when it arrives before the apiserver finished starting.
const notReadyWait = 10 * time.Second

// waitSynced waits (briefly) for informers that a request needs; a request
// that arrives while the apiserver is still starting waits for them rather
// than being judged on an empty cache.
func waitSynced(ctx context.Context, plugin string, syncs ...interface{ Synced() <-chan struct{} }) error {
	for _, s := range syncs {
		select {
		case <-s.Synced():
			continue
		default:
		}
		t := time.NewTimer(notReadyWait)
		select {
		case <-s.Synced():
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
			return apierrors.NewServiceUnavailable(fmt.Sprintf("admission plugin %s is not ready yet (its caches are loading): retry", plugin))
		}
	}
	return nil
}
