module skiff.dev/services/scheduler

go 1.26.0

require (
	skiff.dev/internal v0.0.0
	skiff.dev/proto v0.0.0
)

replace (
	skiff.dev/internal => ../../internal
	skiff.dev/proto => ../../proto
)
