// Package sim is a simulated container runtime: a CRI server
// (runtime.v1 RuntimeService and ImageService over gRPC) that keeps its
// sandboxes, containers and images in memory, so that one machine can
// host hundreds of node agents running the same code they run against
// containerd.
//
// What it simulates:
//
//	runtime.go  sandboxes and containers: RunPodSandbox gives the sandbox an
//	            IP from Options.Subnet at once, StartContainer makes a
//	            container RUNNING at once; StopContainer and StopPodSandbox
//	            make them EXITED (code 143, as a process ended by SIGTERM);
//	            ExecSync answers from Options.Exec (exit 0 by default);
//	            container log files are created where the agent asked
//	            (sandbox log directory + container log path), in the CRI
//	            log format, and written only through WriteLog
//	stats.go    CPU and memory (ListContainerStats, ListPodSandboxStats and
//	            their single forms): each running container uses
//	            Options.Usage (DefaultUsage: 5m, 8 MiB) on the runtime's
//	            clock, an exited one reports no CPU or memory, a ready
//	            sandbox reports its containers' sum
//	image.go    images: PullImage succeeds at once for any image unless it
//	            was declared missing (then it fails as containerd does on a
//	            registry 404); CreateContainer refuses an image not pulled
//	control.go  the test's handle: make a container exit with a code, fail
//	            the next N calls of an operation, add latency to one, set
//	            the runtime's and network's readiness, list what exists
//	server.go   the gRPC wire: a unix socket (Start) or any listener (Serve);
//	            the one place errors become gRPC codes
//
// It does not run processes, make network namespaces or enforce
// resources: a sandbox IP answers nothing. Probes of the httpGet and
// tcpSocket kinds therefore need a dialer that maps pod IPs somewhere
// real (the agent takes one), or exec probes.
package sim
