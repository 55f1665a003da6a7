package integration

import (
	"os"
	"testing"

	"skiff.dev/services/apiserver/apiserver"
)

var fuzzDir string

func fuzzConfig() apiserver.Config {
	dir, err := os.MkdirTemp("", "skiff-fuzz-")
	if err != nil {
		panic(err)
	}
	fuzzDir = dir
	return apiserver.Config{DataDir: dir, Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fuzzServer != nil {
		fuzzServer.Stop()
		os.RemoveAll(fuzzDir)
	}
	os.Exit(code)
}
