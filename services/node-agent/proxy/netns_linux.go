//go:build linux

package proxy

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/vishvananda/netns"
	"sigs.k8s.io/knftables"
)

// NetnsThread runs functions on one OS thread that sits in a network
// namespace. A process started from that thread (knftables runs the nft
// binary) is born in the namespace: this is how the proxy programs a
// namespace other than its own (tests, the bench) without nsenter.
type NetnsThread struct {
	calls chan func()
	done  chan struct{}
	once  sync.Once
}

// NewNetnsThread starts the thread and moves it into ns. Close ends it
// (the thread exits with its goroutine and never runs other Go code).
func NewNetnsThread(ns netns.NsHandle) (*NetnsThread, error) {
	t := &NetnsThread{calls: make(chan func()), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread leaves the namespace only by
		// exiting, when this goroutine returns.
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("entering network namespace %s: %w", ns, err)
			return
		}
		errc <- nil
		for {
			select {
			case f := <-t.calls:
				f()
			case <-t.done:
				return
			}
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return t, nil
}

// Do runs f on the thread and waits for it. After Close it fails.
func (t *NetnsThread) Do(f func()) error {
	ran := make(chan struct{})
	select {
	case t.calls <- func() { f(); close(ran) }:
	case <-t.done:
		return errors.New("network namespace thread closed")
	}
	<-ran
	return nil
}

// Close ends the thread.
func (t *NetnsThread) Close() { t.once.Do(func() { close(t.done) }) }

// NewNFTablesIn returns knftables' real Interface for table TableName that
// runs every nft command in the namespace of t (checks included).
func NewNFTablesIn(t *NetnsThread) (knftables.Interface, error) {
	var nft knftables.Interface
	var err error
	if derr := t.Do(func() { nft, err = knftables.New(knftables.IPv4Family, TableName) }); derr != nil {
		return nil, derr
	}
	if err != nil {
		return nil, err
	}
	return &nsNFTables{nft: nft, t: t}, nil
}

// nsNFTables sends every call that may run nft to the namespace's thread.
type nsNFTables struct {
	nft knftables.Interface
	t   *NetnsThread
}

func (n *nsNFTables) NewTransaction() *knftables.Transaction { return n.nft.NewTransaction() }

func (n *nsNFTables) Run(ctx context.Context, tx *knftables.Transaction) (err error) {
	if derr := n.t.Do(func() { err = n.nft.Run(ctx, tx) }); derr != nil {
		return derr
	}
	return err
}

func (n *nsNFTables) Check(ctx context.Context, tx *knftables.Transaction) (err error) {
	if derr := n.t.Do(func() { err = n.nft.Check(ctx, tx) }); derr != nil {
		return derr
	}
	return err
}

func (n *nsNFTables) List(ctx context.Context, objectType string) (out []string, err error) {
	if derr := n.t.Do(func() { out, err = n.nft.List(ctx, objectType) }); derr != nil {
		return nil, derr
	}
	return out, err
}

func (n *nsNFTables) ListAll(ctx context.Context) (out map[string][]string, err error) {
	if derr := n.t.Do(func() { out, err = n.nft.ListAll(ctx) }); derr != nil {
		return nil, derr
	}
	return out, err
}

func (n *nsNFTables) ListRules(ctx context.Context, chain string) (out []*knftables.Rule, err error) {
	if derr := n.t.Do(func() { out, err = n.nft.ListRules(ctx, chain) }); derr != nil {
		return nil, derr
	}
	return out, err
}

func (n *nsNFTables) ListElements(ctx context.Context, objectType, name string) (out []*knftables.Element, err error) {
	if derr := n.t.Do(func() { out, err = n.nft.ListElements(ctx, objectType, name) }); derr != nil {
		return nil, derr
	}
	return out, err
}

func (n *nsNFTables) ListCounters(ctx context.Context) (out []*knftables.Counter, err error) {
	if derr := n.t.Do(func() { out, err = n.nft.ListCounters(ctx) }); derr != nil {
		return nil, derr
	}
	return out, err
}
