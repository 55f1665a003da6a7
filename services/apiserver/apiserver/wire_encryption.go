package apiserver

import (
	"fmt"

	"go.uber.org/zap"

	"skiff.dev/services/apiserver/encryption"
)

// loadEncryption reads cfg.Encryption or the --encryption-provider-config
// file; a bad configuration stops the start with an error naming the field.
func (s *Server) loadEncryption() error {
	c := s.cfg.Encryption
	if c == nil && s.cfg.EncryptionProviderConfig != "" {
		var err error
		if c, err = encryption.LoadFile(s.cfg.EncryptionProviderConfig); err != nil {
			return err
		}
	}
	if c == nil {
		return nil
	}
	set, err := encryption.New(c, encryption.NewMetrics(s.cfg.Registry))
	if err != nil {
		return fmt.Errorf("encryption provider config: %w", err)
	}
	s.encryption = set
	var names []string
	for _, r := range c.Resources {
		names = append(names, r.Resources...)
	}
	s.log.Info("encryption at rest", zap.Strings("resources", names))
	return nil
}
