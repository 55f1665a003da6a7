package agent

import (
	"context"

	"skiff.dev/internal/informer"
)

// refreshVolumes enqueues every running pod with configMap, secret,
// downwardAPI or projected volumes, every Config.VolumeSyncPeriod: its
// sync rewrites them from their sources (the atomic writer leaves a volume
// alone when nothing changed), so that an update of a Secret or ConfigMap
// reaches the files within the period, as the kubelet's periodic sync does.
func (a *Agent) refreshVolumes(context.Context) error {
	for _, p := range a.pods.Store().List() {
		if p.GetMetadata().GetDeletionTimestamp() != nil || !hasRefreshedVolumes(p) {
			continue
		}
		if ph := p.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
			continue
		}
		a.ctrl.Enqueue(informer.Key(p))
	}
	return nil
}

// volumeEnv is what prepareVolumes needs from the agent, reading objects
// through get.
func (a *Agent) volumeEnv(get sources) volumeEnv {
	return volumeEnv{root: a.cfg.RootDir, get: get, allocatable: a.machine.capacity(a.cfg.MaxPods, a.cfg.Capacity),
		tokens: a.tokens, tmpfs: !a.cfg.SecretVolumesOnDisk, localRoot: a.cfg.LocalVolumeRoot}
}
