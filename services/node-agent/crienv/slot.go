package crienv

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// lockDir holds the slot locks and the install lock.
const lockDir = "/run/skiff-crienv"

// maxSlot bounds the slots: 10.88.1.0/24 .. 10.88.254.0/24.
const maxSlot = 254

// slot is what makes an Env's network unique on the machine while it
// lives: the lock file is held (flock) by the process owning the Env and
// records the Env's directory, so that a later process taking the slot
// after a crash knows what to clean.
type slot struct {
	n    int
	lock *os.File
	// stale is the directory recorded by a previous owner that did not
	// close its Env ("" if none).
	stale string
}

func (s *slot) bridge() string  { return fmt.Sprintf("skiffbr%d", s.n) }
func (s *slot) network() string { return fmt.Sprintf("skiff-crienv-%d", s.n) }
func (s *slot) subnet() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 88, byte(s.n), 0}), 24)
}
func (s *slot) gateway() netip.Addr { return netip.AddrFrom4([4]byte{10, 88, byte(s.n), 1}) }

// acquireSlot takes the first free slot whose subnet no other interface of
// the machine uses.
func acquireSlot() (*slot, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("crienv: slot locks: %w", err)
	}
	for n := 1; n <= maxSlot; n++ {
		f, err := os.OpenFile(filepath.Join(lockDir, fmt.Sprintf("slot-%d.lock", n)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, fmt.Errorf("crienv: slot locks: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return nil, fmt.Errorf("crienv: slot %d lock: %w", n, err)
		}
		s := &slot{n: n, lock: f}
		if subnetInUse(s.subnet(), s.bridge()) {
			_ = s.release()
			continue
		}
		s.stale = readRecord(f)
		return s, nil
	}
	return nil, fmt.Errorf("crienv: all %d slots (10.88.1-%d.0/24) are taken or in use", maxSlot, maxSlot)
}

// sweepStale cleans the leftovers of every slot whose owner died without
// Close: its lock is free but it still records a directory. It returns
// what it cleaned, as warnings.
func sweepStale() []string {
	files, _ := filepath.Glob(filepath.Join(lockDir, "slot-*.lock"))
	var warnings []string
	for _, path := range files {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(path), "slot-%d.lock", &n); err != nil || n < 1 || n > maxSlot {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0o644)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // in use
			continue
		}
		s := &slot{n: n, lock: f, stale: readRecord(f)}
		if s.stale != "" {
			warnings = append(warnings, cleanStale(s)...)
		}
		_ = s.release()
	}
	return warnings
}

func readRecord(f *os.File) string {
	b := make([]byte, 4096)
	k, _ := f.ReadAt(b, 0)
	return strings.TrimSpace(string(b[:k]))
}

// record writes the Env's directory into the lock file.
func (s *slot) record(dir string) error {
	if err := s.lock.Truncate(0); err != nil {
		return err
	}
	_, err := s.lock.WriteAt([]byte(dir+"\n"), 0)
	return err
}

// release forgets the directory and unlocks the slot.
func (s *slot) release() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Truncate(0)
	if uerr := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN); err == nil {
		err = uerr
	}
	if cerr := s.lock.Close(); err == nil {
		err = cerr
	}
	s.lock = nil
	return err
}

// subnetInUse reports whether an interface other than ours (a leftover
// bridge of the slot is ours) has an address in p.
func subnetInUse(p netip.Prefix, ours string) bool {
	ifaces, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, ifc := range ifaces {
		if ifc.Name == ours {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && p.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	return false
}

// lockFile takes an exclusive flock on path, waiting for it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
