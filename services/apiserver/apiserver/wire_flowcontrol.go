package apiserver

import (
	"context"

	"skiff.dev/services/apiserver/audit"
	"skiff.dev/services/apiserver/flowcontrol"
	"skiff.dev/services/apiserver/server"
)

// wireFlowControl builds the fair-queuing limiter from cfg.FlowControl; nil is no limit.
// Its work estimate of a List counts the objects in the kind's watch cache.
func (s *Server) wireFlowControl() (server.Limiter, error) {
	l, err := flowcontrol.New(s.cfg.FlowControl, s.countObjects, s.cfg.Registry)
	if err != nil || l == nil {
		return nil, err // no typed nil in the interface
	}
	return l, nil
}

// groupResource names a kind's resource: its API group and plural name.
type groupResource struct{ group, resource string }

// countObjects is the flowcontrol.ObjectCounter of the installed kinds.
func (s *Server) countObjects(group, resource, namespace string, upTo int) (int, bool) {
	count := s.objects[groupResource{group, resource}]
	if count == nil {
		return 0, false
	}
	n, err := count(namespace, upTo)
	return n, err == nil
}

// wireAudit builds the audit log from cfg.Audit; nil writes none. Its
// writer starts with the server and stops with it (a post-start hook);
// events of requests that finish later are written by those requests.
func (s *Server) wireAudit() (server.Auditor, error) {
	l, err := audit.New(s.cfg.Audit, s.cfg.Registry, s.log)
	if err != nil || l == nil {
		return nil, err
	}
	s.postStart = append(s.postStart, postStartHook{name: "audit-log", run: func(ctx context.Context) error {
		go l.Run(ctx)
		return nil
	}})
	return l, nil
}
