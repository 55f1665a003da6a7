package admission

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/informer"
)

type entry[P any] struct {
	name   string
	p      P
	series *pluginSeries
}

// Chain runs the enabled plugins: Admit the mutating ones in order, Validate
// the validating ones in order. A nil *Chain admits everything.
type Chain struct {
	names      []string
	mutating   []entry[MutationInterface]
	validating []entry[ValidationInterface]
	starters   []entry[Starter]
	informers  *informer.Factory
	m          *Metrics
	log        *zap.Logger
}

// Names lists the enabled plugins in order.
func (c *Chain) Names() []string {
	if c == nil {
		return nil
	}
	return c.names
}

// Admit runs the mutating plugins in order; the first refusal ends it.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	if c == nil || len(c.mutating) == 0 {
		return nil
	}
	return run(c, c.mutating, stepAdmit, a, func(p MutationInterface) error { return p.Admit(ctx, a) })
}

// Validate runs the validating plugins in order; the first refusal ends it.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	if c == nil || len(c.validating) == 0 {
		return nil
	}
	return run(c, c.validating, stepValidate, a, func(p ValidationInterface) error { return p.Validate(ctx, a) })
}

func run[P any](c *Chain, plugins []entry[P], step int, a *Attributes, call func(P) error) error {
	op := opIndex(a.Operation)
	start := time.Now()
	last := start
	var err error
	for _, e := range plugins {
		err = call(e.p)
		now := time.Now()
		e.series[op][rejected(err)].Observe(now.Sub(last).Seconds())
		last = now
		if err != nil {
			break
		}
	}
	c.m.stepSeries[step][op][rejected(err)].Observe(last.Sub(start).Seconds())
	return err
}

func rejected(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

// Start starts the plugins' informers and background work and returns once
// every plugin is ready; the work goes on until ctx ends. The apiserver
// calls it from a post-start hook (the informers read through the
// loopback, which serves only then).
func (c *Chain) Start(ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.informers.Start(ctx)
	if !c.informers.WaitForSync(ctx) {
		return fmt.Errorf("admission informers did not sync: %w", ctx.Err())
	}
	for _, s := range c.starters {
		if err := s.p.Start(ctx); err != nil {
			return fmt.Errorf("admission plugin %s: %w", s.name, err)
		}
	}
	c.log.Info("admission chain ready", zap.Strings("plugins", c.names))
	return nil
}
