// Command pause is Skiff's pod sandbox image: the first process of every pod,
// holding its namespaces open. It sleeps until SIGTERM or SIGINT (then exits
// 0) and, as PID 1 of a pod that shares its PID namespace, reaps the zombies
// orphaned to it. It is built static (CGO_ENABLED=0) by imagebuild and
// imported as skiff.local/pause:3.9; no registry is involved.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "3.9"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause", version)
		return
	}
	run(nil)
}

// run waits for SIGTERM or SIGINT, reaping children meanwhile; ready, if
// set, is called once the signals are caught.
func run(ready func()) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	if ready != nil {
		ready()
	}
	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			os.Exit(0)
		}
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
