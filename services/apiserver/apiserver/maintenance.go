package apiserver

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

type maintenanceMetrics struct {
	dbSize      *prometheus.GaugeVec
	compactions prometheus.Counter
	defrags     prometheus.Counter
}

func newMaintenanceMetrics(reg prometheus.Registerer) *maintenanceMetrics {
	m := &maintenanceMetrics{
		dbSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_storage_db_total_size_in_bytes",
			Help: "Size of the etcd database file (allocated) and of the part in use.",
		}, []string{"kind"}),
		compactions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_storage_compactions_total",
			Help: "Compactions of old etcd revisions done by the apiserver.",
		}),
		defrags: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_storage_defragmentations_total",
			Help: "Defragmentations of the etcd database done by the apiserver.",
		}),
	}
	reg.MustRegister(m.dbSize, m.compactions, m.defrags)
	return m
}

// maintain runs compaction, defragmentation and the size metrics until ctx ends.
func (s *Server) maintain(ctx context.Context) {
	sizeTick := time.NewTicker(15 * time.Second)
	defer sizeTick.Stop()
	var compactC <-chan time.Time
	if s.cfg.CompactionInterval > 0 {
		t := time.NewTicker(s.cfg.CompactionInterval)
		defer t.Stop()
		compactC = t.C
	}
	// The certificates the apiserver issued itself are renewed within 30
	// days of their expiry, looked at hourly (authn.Material.Renew).
	renewTick := time.NewTicker(time.Hour)
	defer renewTick.Stop()
	var previous int64 // the revision seen at the previous tick
	for {
		select {
		case <-ctx.Done():
			return
		case <-renewTick.C:
			s.renewCertificates()
		case <-sizeTick.C:
			s.measure(ctx)
		case <-compactC:
			previous = s.compact(ctx, previous)
		}
	}
}

// renewCertificates renews the certificates the apiserver issued itself
// when they near expiry.
func (s *Server) renewCertificates() {
	if s.tls == nil {
		return
	}
	renewed, err := s.tls.Renew(s.now())
	if err != nil {
		s.log.Error("renewing the apiserver's certificates", zap.Error(err))
	}
	if len(renewed) > 0 {
		s.log.Info("certificates renewed from the cluster CA", zap.Strings("certificates", renewed))
	}
}

// compact compacts everything older than the revision seen one interval
// ago, so watchers always have at least one interval of history, then
// defragments when enough space is free. It returns the current revision.
func (s *Server) compact(ctx context.Context, previous int64) int64 {
	resp, err := s.client.Get(ctx, "compact_rev_key", clientv3.WithCountOnly())
	if err != nil {
		s.log.Warn("compaction: reading the current revision failed", zap.Error(err))
		return previous
	}
	current := resp.Header.Revision
	if previous > 0 {
		if _, err := s.client.Compact(ctx, previous, clientv3.WithCompactPhysical()); err != nil {
			s.log.Info("compaction skipped", zap.Int64("revision", previous), zap.Error(err))
		} else {
			s.maint.compactions.Inc()
			s.log.Info("compacted etcd", zap.Int64("revision", previous))
			s.defragIfWorthIt(ctx)
		}
	}
	return current
}

func (s *Server) endpoint() string {
	if len(s.cfg.EtcdServers) > 0 {
		return s.cfg.EtcdServers[0]
	}
	return s.EtcdEndpoint()
}

func (s *Server) defragIfWorthIt(ctx context.Context) {
	st, err := s.maintClient.Status(ctx, s.endpoint())
	if err != nil {
		return
	}
	if free := st.DbSize - st.DbSizeInUse; shouldDefrag(free, s.cfg.DefragThreshold) {
		start := time.Now()
		if _, err := s.maintClient.Defragment(ctx, s.endpoint()); err != nil {
			s.log.Warn("defragmentation failed", zap.Error(err))
			return
		}
		s.maint.defrags.Inc()
		s.log.Info("defragmented etcd", zap.Int64("freed_bytes", free), zap.Duration("took", time.Since(start)))
	}
}

// shouldDefrag: defragment when at least threshold bytes of the database
// file are free; a negative threshold always defragments.
func shouldDefrag(free, threshold int64) bool {
	return threshold < 0 || (free > 0 && free >= threshold)
}

func (s *Server) measure(ctx context.Context) {
	if st, err := s.maintClient.Status(ctx, s.endpoint()); err == nil {
		s.maint.dbSize.WithLabelValues("allocated").Set(float64(st.DbSize))
		s.maint.dbSize.WithLabelValues("in_use").Set(float64(st.DbSizeInUse))
	}
	for _, count := range s.counts {
		resource, n := count()
		s.storeM.SetObjectCount(resource, n)
	}
}
