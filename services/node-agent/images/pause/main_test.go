package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestMain runs the real main when the test binary is started by
// TestExitsZeroOnSignal as the pause program.
func TestMain(m *testing.M) {
	if os.Getenv("PAUSE_TEST_RUN_MAIN") == "1" {
		run(func() { os.Stdout.WriteString("started\n") })
		return
	}
	os.Exit(m.Run())
}

func TestExitsZeroOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PAUSE_TEST_RUN_MAIN=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until its signal handler is set up.
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "started" {
			t.Fatalf("child said %q", line)
		}
		_ = cmd.Process.Signal(sig)
		werr := cmd.Wait()
		if werr != nil {
			t.Errorf("after %v: %v, want exit 0", sig, werr)
		}
	}
}

func TestVersion(t *testing.T) {
	if version == "" {
		t.Error("no version")
	}
}
