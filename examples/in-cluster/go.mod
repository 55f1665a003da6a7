module skiff.dev/examples/in-cluster

go 1.26.0

require (
	google.golang.org/grpc v1.85.0
	skiff.dev/internal v0.0.0
	skiff.dev/proto v0.0.0
	skiff.dev/services/apiserver v0.0.0
)
