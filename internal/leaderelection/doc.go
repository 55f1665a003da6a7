// Package leaderelection lets one of several replicas of a component do the
// work while the others stand by, through a coordination/v1 Lease, as
// client-go's leaderelection does.
//
// A caller runs, once per process:
//
//	err := leaderelection.Run(ctx, cfg, func(ctx context.Context) { ...work until ctx is done... })
//
// Run blocks. It tries to acquire the Lease every RetryPeriod (creating it
// when absent, taking it over once its holder has not renewed it for the
// lease's duration, or at once when it was released or names this
// candidate's own Identity), then calls lead in a goroutine and renews
// every RetryPeriod. Time is measured only on this process's clock: a lease
// is expired when its record has not changed for leaseDurationSeconds since
// this process last saw it change, whatever its renewTime says.
//
// Identity names a member, not a process: it must be unique among the
// candidates and the same after a restart (DefaultIdentity, the host name,
// is both with one member per host). A member restarted after a crash
// (kill -9: no release) finds the Lease held by its own identity and leads
// at once, instead of waiting out the lease its previous run left; the
// price is that two processes given one identity would both lead.
//
// Run returns:
//   - nil after ctx is cancelled: lead's context is cancelled, lead has
//     returned and the Lease has been released (holder emptied) so that a
//     standby takes over at its next retry. The same when lead returns on
//     its own while leading.
//   - ErrLeaderLost when no renewal succeeded within RenewDeadline of the
//     last successful one, or another holder took the Lease. lead's context
//     is cancelled at that moment, Run waits for lead to return, and the
//     binary should exit: RenewDeadline < LeaseDuration guarantees that lead
//     is told to stop before any standby can believe the lease expired.
//   - a configuration error, at once.
//
// Every write carries the resourceVersion read (or last written), so two
// candidates never both believe they won.
//
// The package owns the Lease's spec and the metric
// leader_election_master_status{name}. It does not create namespaces, does
// not restart lead after a loss (exit and let the supervisor restart the
// process), and does not tell non-leaders who leads.
package leaderelection
